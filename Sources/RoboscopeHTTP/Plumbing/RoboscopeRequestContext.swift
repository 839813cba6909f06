import Hummingbird
import Logging
import NIOCore

/// The request context of every route: Hummingbird's core storage plus the peer address.
public struct RoboscopeRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// Bodies are collected by `RequestBody` with its own limit.
    public var maxUploadSize: Int { Int.max }
}
