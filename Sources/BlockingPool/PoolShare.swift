/// Whose work a pool job is, for the pools' fair share (`BlockingPool`'s `ownerShare`):
/// the HTTP API binds it to the request's tenant around the request's handling, so every
/// statement the request runs, on any pool, counts against that tenant's share without
/// each call passing it along (as swift-distributed-tracing carries a span).
public enum PoolShare {
    @TaskLocal public static var owner: String?
}
