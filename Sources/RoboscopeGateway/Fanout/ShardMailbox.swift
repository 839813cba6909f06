import RoboscopeAuth
import RoboscopeDomain
import RoboscopePostgres

/// A shard's place among the gateway's loops.
struct ShardAddress: Hashable, Sendable {
    let index: Int
}

/// What other threads tell a shard. Each is a value: nothing that crosses into a shard
/// refers to it or to its connections, which live on its thread only.
enum ShardMessage: Sendable {
    /// Live items (the tailer's events, the presence thread's changes) for the topics'
    /// subscribers here.
    case deliver([LiveItem])
    /// A message for one connection (presence answers), if it is still open.
    case send([UInt8], to: UInt64)
    /// The tailer's answer to a connection's subscribe.
    case settle(connectionID: UInt64, grant: PendingGrant, outcome: SubscribeOutcome)
    /// A page of a connection's catch-up, from the catch-up reader.
    case catchUpPage(CatchUpPage, connectionID: UInt64, grant: PendingGrant)
    /// Where an entity lives, answering the shard's look-up `lookUp` (nil: unknown, or
    /// the tailer could not tell).
    case placed(lookUp: UInt64, Place?)
    /// The presence thread found the session full: the connection does not hold `key`.
    case presenceRefused(PresenceKey, connectionID: UInt64)
    /// Closes with 4001 the authenticated connections whose principal `ends` says no
    /// longer holds (a revocation, a retired key, an operator's disconnect).
    case end(RefusalReason, String, where: @Sendable (Principal) -> Bool)
    /// Stops accepting and starts closing every connection with 1001.
    case closeAll
    /// Closes whatever is left without waiting for the peers.
    case terminateAll
}

/// The one way into a shard from another thread: a message posted to its loop's inbox.
struct ShardMailbox: Sendable {
    let address: ShardAddress
    let inbox: Inbox<ShardMessage>

    func post(_ message: ShardMessage) {
        inbox.post(message)
    }
}
