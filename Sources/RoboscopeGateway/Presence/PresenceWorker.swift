import BlockingPool
import Foundation
import Logging
import RoboscopeDomain
import RoboscopeRedis
import CLinuxSystem
#if canImport(Glibc)
import Glibc
#endif

/// The gateway's presence thread, on two Redis connections of its own:
/// - relays joins and leaves (Redis pub/sub) to the subscribers of the session: as the
///   full `presence` list, or as `joined`/`left` to those that asked for changes;
/// - keeps users of `presence` ops present with heartbeats, and lets them go a grace
///   period after their last connection closes, unless someone heartbeated since;
/// - sweeps expired members of watched sessions, which announces their leaves;
/// - publishes the gateway's connection directory, and hears operators' disconnects.
///
/// Sendable as it is: the holdings and both Redis connections live inside the thread's
/// body (locals of `run`; the thread is handed the shards it broadcasts to when it
/// starts), and other threads reach it only through `inbox`.
final class PresenceWorker: Sendable {
    typealias Holdings = PresenceHoldings<ContinuousClock.Instant>

    private enum Job {
        case hold(PresenceKey, replyTo: ShardMailbox, connectionID: UInt64)
        case release(PresenceKey)
        case snapshot(Topic, replyTo: ShardMailbox, connectionID: UInt64)
    }

    private let endpoint: RedisEndpoint
    private let store: PresenceStore
    private let configuration: GatewayConfiguration
    private let registry: TopicRegistry
    private let directory: ConnectionDirectory
    private let logger: Logger
    private let inbox: Inbox<Job>
    private var waker: Waker { inbox.waker }
    private let thread = ThreadSlot()
    private let clock = ContinuousClock()

    /// `store` supplies the scripts and the window; its calls run on this thread's own connections.
    init(
        endpoint: RedisEndpoint, store: PresenceStore, configuration: GatewayConfiguration, registry: TopicRegistry,
        directory: ConnectionDirectory, logger: Logger
    ) throws {
        self.directory = directory
        self.endpoint = endpoint
        self.store = store
        self.configuration = configuration
        self.registry = registry
        self.logger = logger
        inbox = try Inbox()
    }

    /// Starts the presence thread, broadcasting to `shards`.
    func start(delivering shards: [ShardMailbox]) {
        thread.start(name: "ws-presence") { [self] in run(shards) }
    }

    func stop() async {
        inbox.close()
        await thread.join()
    }

    func hold(_ key: PresenceKey, for shard: ShardMailbox, connectionID: UInt64) {
        enqueue(.hold(key, replyTo: shard, connectionID: connectionID))
    }
    func release(_ key: PresenceKey) { enqueue(.release(key)) }
    func snapshot(of topic: Topic, for shard: ShardMailbox, connectionID: UInt64) {
        enqueue(.snapshot(topic, replyTo: shard, connectionID: connectionID))
    }

    private func enqueue(_ job: Job) { inbox.post(job) }

    // MARK: The loop

    private func run(_ shards: [ShardMailbox]) {
        var holdings = Holdings(window: configuration.presenceWindow, grace: configuration.presenceGrace)
        var redis: (commands: RedisConnection, subscriber: RedisSubscriber)?
        var nextSweep = clock.now
        var sweep = PresenceSweep()
        var backoff = Backoff()
        while true {
            let (jobs, stop) = inbox.take()
            if stop { return leaveAll(redis?.commands, &holdings) }
            var remaining = jobs[...]
            do {
                let connected: (commands: RedisConnection, subscriber: RedisSubscriber)
                if let redis, !redis.commands.isBroken {
                    connected = redis
                } else {
                    connected = (
                        try endpoint.connect(),
                        try RedisSubscriber(
                            endpoint,
                            patterns: [PresenceStore.channelPattern, directory.keys.disconnectChannel])
                    )
                    redis = connected
                    backoff.succeeded()
                    sweep.forgetAll()
                }
                let commands = connected.commands
                var holds: [Hold] = []
                while let job = remaining.popFirst() {
                    try perform(job, holding: &holds, commands, &holdings)
                }
                try heartbeat(&holds, commands, &holdings)
                try beatAndLeave(commands, &holdings)
                if clock.now >= nextSweep {
                    nextSweep = clock.now + .seconds(2)
                    try sweep.sweep(registry.workSessions) { session in
                        try store.users(session: session.description, on: commands)
                    }
                    try directory.publish(on: commands)
                }
                var changed: [String: PresenceDelta] = [:]
                if waker.wait(timeoutMilliseconds: 250, orReadable: connected.subscriber.socket) {
                    for message in try connected.subscriber.messages() {
                        if message.channel == directory.keys.disconnectChannel {
                            disconnect(message.payload, shards)
                        } else if let session = PresenceStore.session(ofChannel: message.channel) {
                            changed[session, default: PresenceDelta()].apply(message.payload)
                            if let id = EntityID(session) { sweep.heard(id) }
                        }
                    }
                }
                for (session, delta) in changed {
                    guard let id = EntityID(session) else { continue }
                    let topic = Topic(.workSession, id)
                    guard registry.contains(topic) else { continue }
                    let users = try store.users(session: session, on: commands)
                    broadcast(
                        topic, full: ServerMessage.presence(topic, users: users),
                        delta: delta.isEmpty
                            ? nil : ServerMessage.presence(topic, joined: delta.joined, left: delta.left),
                        to: shards)
                }
            } catch {
                logger.warning("gateway presence lost Redis; retrying", metadata: ["error": "\(error)"])
                for job in remaining { refuse(job, &holdings) }
                redis = nil
                waker.wait(timeoutMilliseconds: backoff.failed().milliseconds)
            }
        }
    }

    /// An operator's `DELETE /admin/connections`: every shard closes the matching sockets.
    private func disconnect(_ payload: String, _ shards: [ShardMailbox]) {
        guard let disconnect = ConnectionDirectory.Disconnect(payload: payload) else { return }
        for shard in shards {
            shard.post(.end(.disconnected, "disconnected", where: disconnect.matches))
        }
    }

    /// A `presence` op waiting for its heartbeat, and the connection to answer.
    private struct Hold {
        var key: PresenceKey
        var shard: ShardMailbox
        var connectionID: UInt64
    }

    /// Carries out `job`. A hold only joins `holds`: the holds of one turn heartbeat
    /// together, in one round trip to Redis (`heartbeat(_:_:)`), before anything that
    /// reads presence back. If Redis fails on the way, answers the job as `refuse` would
    /// (once) and rethrows.
    private func perform(
        _ job: Job, holding holds: inout [Hold], _ redis: RedisConnection, _ holdings: inout Holdings
    ) throws {
        switch job {
        case .hold(let key, let shard, let connectionID):
            _ = holdings.held(key)
            holds.append(Hold(key: key, shard: shard, connectionID: connectionID))
        case .release(let key):
            holdings.released(key, now: clock.now)
        case .snapshot(let topic, let shard, let connectionID):
            try heartbeat(&holds, redis, &holdings)
            let message: [UInt8]
            do {
                message = ServerMessage.presence(
                    topic, users: try store.users(session: topic.id.description, on: redis))
            } catch {
                shard.post(.send(Self.unavailable, to: connectionID))
                throw error
            }
            shard.post(.send(message, to: connectionID))
        }
    }

    /// Heartbeats every waiting hold in one pipeline and answers each `present`; if
    /// Redis fails, answers each `unavailable` (the holdings still count: `due` beats
    /// them when Redis returns) and rethrows.
    private func heartbeat(_ holds: inout [Hold], _ redis: RedisConnection, _ holdings: inout Holdings) throws {
        guard !holds.isEmpty else { return }
        let waiting = holds
        holds = []
        let full: Set<PresenceKey>
        do {
            full = try beat(waiting.map(\.key), redis, &holdings)
        } catch {
            for hold in waiting {
                hold.shard.post(.send(Self.unavailable, to: hold.connectionID))
            }
            throw error
        }
        for hold in waiting {
            if full.contains(hold.key) {
                hold.shard.post(.presenceRefused(hold.key, connectionID: hold.connectionID))
                continue
            }
            let message = ServerMessage.present(workSessionID: hold.key.workSessionID, user: hold.key.user)
            hold.shard.post(.send(message, to: hold.connectionID))
        }
    }

    /// The heartbeats and leaves that have fallen due, each kind in one pipeline: when
    /// thousands of users were held by connections that closed at once, their leaves
    /// come due together.
    private func beatAndLeave(_ redis: RedisConnection, _ holdings: inout Holdings) throws {
        var beats: [PresenceKey] = []
        var leaves: [(key: PresenceKey, lastSeen: Int64)] = []
        for action in holdings.due(now: clock.now) {
            switch action {
            case .heartbeat(let key): beats.append(key)
            case .leave(let key, let lastSeen): leaves.append((key, lastSeen))
            }
        }
        try beat(beats, redis, &holdings)
        try leave(leaves, redis, &holdings)
    }

    /// Heartbeats `keys` in one pipeline and records each beat in the holdings; returns
    /// the keys refused because their session is full (no longer held).
    @discardableResult
    private func beat(
        _ keys: [PresenceKey], _ redis: RedisConnection, _ holdings: inout Holdings
    ) throws -> Set<PresenceKey> {
        guard !keys.isEmpty else { return [] }
        let beats = try store.heartbeats(keys.map { ($0.workSessionID.description, $0.user) }, on: redis)
        let now = clock.now
        var full: Set<PresenceKey> = []
        for (key, beat) in zip(keys, beats) {
            switch beat {
            case .present(_, let at):
                holdings.beaten(key, redisTime: at, now: now)
            case .full:
                holdings.refused(key)
                full.insert(key)
            }
        }
        return full
    }

    /// Leaves for `leaves` in one pipeline (each unless someone heartbeated since) and
    /// records them in the holdings.
    private func leave(
        _ leaves: [(key: PresenceKey, lastSeen: Int64)], _ redis: RedisConnection, _ holdings: inout Holdings
    ) throws {
        guard !leaves.isEmpty else { return }
        _ = try store.leaves(leaves.map { ($0.key.workSessionID.description, $0.key.user, $0.lastSeen) }, on: redis)
        for leave in leaves { holdings.left(leave.key) }
    }

    private func leaveAll(_ redis: RedisConnection?, _ holdings: inout Holdings) {
        guard let redis else { return }
        let leaves = holdings.leavingAll().compactMap { action -> (key: PresenceKey, lastSeen: Int64)? in
            if case .leave(let key, let lastSeen) = action { return (key, lastSeen) }
            return nil
        }
        try? leave(leaves, redis, &holdings)
    }

    /// The full list for subscribers that asked for it (the default), the joins and
    /// leaves for those that subscribed with `"presence": "changes"`.
    private func broadcast(_ topic: Topic, full: [UInt8], delta: [UInt8]?, to shards: [ShardMailbox]) {
        let items = [
            LiveItem(
                topic: topic, position: nil, frame: SharedFrame(text: full),
                presenceDelta: delta.map { SharedFrame(text: $0) }, isPresence: true)
        ]
        for shard in shards {
            shard.post(.deliver(items))
        }
    }

    private static let unavailable = ServerMessage.error(
        DomainError(.unavailable, "presence is unreachable; retry shortly"))

    /// Answers a job that cannot reach Redis.
    private func refuse(_ job: Job, _ holdings: inout Holdings) {
        switch job {
        case .hold(let key, let shard, let connectionID):
            // Still counted: `due` heartbeats it when Redis returns.
            _ = holdings.held(key)
            shard.post(.send(Self.unavailable, to: connectionID))
        case .snapshot(_, let shard, let connectionID):
            shard.post(.send(Self.unavailable, to: connectionID))
        case .release(let key):
            holdings.released(key, now: clock.now)
        }
    }
}
