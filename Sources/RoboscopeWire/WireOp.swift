/// The `op` of a WebSocket message (docs/websocket.md): what a client sends and what the
/// gateway answers, the one list of them (`VocabularyTests` fails when the kit or the CLI
/// spell one by hand).
public enum WireOp: String, Sendable, CaseIterable {
    // A client's.
    case subscribe, unsubscribe, auth
    /// A client's heartbeat, and the gateway's list (or joins and leaves) of who is there.
    case presence
    // The gateway's.
    case subscribed, unsubscribed, authenticated, event, lock, present, error

    /// What a client may send.
    public static let fromClients: [WireOp] = [.subscribe, .unsubscribe, .presence, .auth]
}
