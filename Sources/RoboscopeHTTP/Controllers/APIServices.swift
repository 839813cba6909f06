import RoboscopePostgres

/// What the controllers share: the event store, the read models and the limits.
public struct APIServices: Sendable {
    public var store: EventStore
    public var reads: ReadModels
    public var bodyLimit: Int

    public init(store: EventStore, reads: ReadModels, bodyLimit: Int) {
        self.store = store
        self.reads = reads
        self.bodyLimit = bodyLimit
    }
}
