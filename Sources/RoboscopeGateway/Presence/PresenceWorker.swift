import Foundation
import Logging
import RoboscopeDomain
import RoboscopeRedis
import CLinuxSystem
#if canImport(Glibc)
import Glibc
#endif

/// The gateway's presence thread, on two Redis connections of its own:
/// - relays joins and leaves (Redis pub/sub) to the subscribers of the session as a
///   full `presence` list;
/// - keeps users of `presence` ops present with heartbeats, and lets them go a grace
///   period after their last connection closes, unless someone heartbeated since;
/// - sweeps expired members of watched sessions, which announces their leaves.
final class PresenceWorker: @unchecked Sendable {
    private enum Job {
        case hold(PresenceKey, shard: Shard, connectionID: UInt64)
        case release(PresenceKey)
        case snapshot(Topic, shard: Shard, connectionID: UInt64)
    }

    /// One user kept present by this gateway.
    private struct Holding {
        var connections = 0
        /// Redis time of our last heartbeat, and when (locally) we sent it.
        var lastBeat: Int64 = 0
        var lastBeatAt: ContinuousClock.Instant?
        /// Set when the last connection closed: leave after this, unless held again.
        var leaveAfter: ContinuousClock.Instant?
    }

    private let url: RedisURL
    private let store: PresenceStore
    private let configuration: GatewayConfiguration
    private let registry: TopicRegistry
    private let logger: Logger
    var shards: [Shard] = []
    private let inbox: Inbox<Job>
    private var waker: Waker { inbox.waker }
    private var thread: JoinableThread?
    private var holdings: [PresenceKey: Holding] = [:]
    private let clock = ContinuousClock()

    /// `store` supplies the scripts and the window; its calls run on this thread's own connections.
    init(url: RedisURL, store: PresenceStore, configuration: GatewayConfiguration, registry: TopicRegistry, logger: Logger) throws {
        self.url = url
        self.store = store
        self.configuration = configuration
        self.registry = registry
        self.logger = logger
        inbox = try Inbox()
    }

    func start() {
        let thread = JoinableThread(name: "ws-presence") { [self] in run() }
        self.thread = thread
        thread.start()
    }

    func stop() {
        inbox.close()
        thread?.join()
    }

    func hold(_ key: PresenceKey, shard: Shard, connectionID: UInt64) { enqueue(.hold(key, shard: shard, connectionID: connectionID)) }
    func release(_ key: PresenceKey) { enqueue(.release(key)) }
    func snapshot(of topic: Topic, shard: Shard, connectionID: UInt64) { enqueue(.snapshot(topic, shard: shard, connectionID: connectionID)) }

    private func enqueue(_ job: Job) { inbox.post(job) }

    // MARK: The loop

    private func run() {
        var subscriber: RedisSubscriber?
        var commands: RedisConnection?
        var nextSweep = clock.now
        var backoff = 0.1
        while true {
            let (jobs, stop) = inbox.take()
            if stop { return leaveAll(commands) }
            var remaining = jobs[...]
            do {
                if subscriber == nil || commands == nil || commands!.isBroken {
                    commands = try RedisConnection(url)
                    subscriber = try RedisSubscriber(url, pattern: PresenceStore.channelPattern)
                    backoff = 0.1
                }
                while let job = remaining.first {
                    try perform(job, commands!)
                    remaining.removeFirst()
                }
                try beatAndLeave(commands!)
                if clock.now >= nextSweep {
                    nextSweep = clock.now + .seconds(2)
                    for session in registry.workSessions {
                        _ = try store.users(session: session.description, on: commands!)
                    }
                }
                var changed: Set<String> = []
                if waker.wait(timeoutMilliseconds: 250, orReadable: subscriber!.socket) {
                    for message in try subscriber!.messages() {
                        if let session = PresenceStore.session(ofChannel: message.channel) { changed.insert(session) }
                    }
                }
                for session in changed {
                    guard let id = EntityID(session) else { continue }
                    let topic = Topic(.workSession, id)
                    guard registry.contains(topic) else { continue }
                    let users = try store.users(session: session, on: commands!)
                    broadcast(topic, ServerMessage.presence(topic, users: users))
                }
            } catch {
                logger.warning("gateway presence lost Redis; retrying", metadata: ["error": "\(error)"])
                for job in remaining { refuse(job) }
                subscriber = nil
                commands = nil
                waker.wait(timeoutMilliseconds: Int32(backoff * 1000))
                backoff = min(backoff * 2, 2)
            }
        }
    }


    private func perform(_ job: Job, _ redis: RedisConnection) throws {
        switch job {
        case .hold(let key, let shard, let connectionID):
            var holding = holdings[key] ?? Holding()
            holding.connections += 1
            holding.leaveAfter = nil
            let beat = try store.heartbeat(session: key.workSessionID.description, user: key.user, on: redis)
            holding.lastBeat = beat.at
            holding.lastBeatAt = clock.now
            holdings[key] = holding
            let message = ServerMessage.present(workSessionID: key.workSessionID, user: key.user)
            shard.loop.execute { shard.send(message, to: connectionID) }
        case .release(let key):
            guard var holding = holdings[key] else { return }
            holding.connections -= 1
            if holding.connections <= 0 {
                holding.connections = 0
                holding.leaveAfter = clock.now + configuration.presenceGrace
            }
            holdings[key] = holding
        case .snapshot(let topic, let shard, let connectionID):
            let users = try store.users(session: topic.id.description, on: redis)
            let message = ServerMessage.presence(topic, users: users)
            shard.loop.execute { shard.send(message, to: connectionID) }
        }
    }

    /// Heartbeats what is held (a third of the window apart) and ends grace periods.
    private func beatAndLeave(_ redis: RedisConnection) throws {
        let now = clock.now
        let interval = configuration.presenceWindow / 3
        for (key, var holding) in holdings {
            if let leaveAfter = holding.leaveAfter {
                if now >= leaveAfter {
                    try store.leave(session: key.workSessionID.description, user: key.user,
                                    ifLastSeenAtOrBefore: holding.lastBeat, on: redis)
                    holdings[key] = nil
                }
            } else if holding.lastBeatAt.map({ now - $0 >= interval }) ?? true {
                let beat = try store.heartbeat(session: key.workSessionID.description, user: key.user, on: redis)
                holding.lastBeat = beat.at
                holding.lastBeatAt = now
                holdings[key] = holding
            }
        }
    }

    /// On shutdown the users this gateway kept present leave now (their connections
    /// are closing with 1001; clients that reconnect elsewhere heartbeat again).
    private func leaveAll(_ redis: RedisConnection?) {
        guard let redis else { return }
        for (key, holding) in holdings {
            _ = try? store.leave(session: key.workSessionID.description, user: key.user,
                                 ifLastSeenAtOrBefore: holding.lastBeat, on: redis)
        }
    }

    private func broadcast(_ topic: Topic, _ message: [UInt8]) {
        let items = [LiveItem(topic: topic, position: nil, frame: SharedFrame(text: message))]
        for shard in shards {
            shard.loop.execute { shard.deliver(items) }
        }
    }

    private func refuse(_ job: Job) {
        let error = ServerMessage.error(DomainError(.unavailable, "presence is unreachable; retry shortly"))
        switch job {
        case .hold(let key, let shard, let connectionID):
            // Still counted: the heartbeats resume when Redis returns.
            var holding = holdings[key] ?? Holding()
            holding.connections += 1
            holding.leaveAfter = nil
            holdings[key] = holding
            shard.loop.execute { shard.send(error, to: connectionID) }
        case .snapshot(_, let shard, let connectionID):
            shard.loop.execute { shard.send(error, to: connectionID) }
        case .release(let key):
            if var holding = holdings[key] {
                holding.connections = max(0, holding.connections - 1)
                if holding.connections == 0 { holding.leaveAfter = clock.now + configuration.presenceGrace }
                holdings[key] = holding
            }
        }
    }
}
