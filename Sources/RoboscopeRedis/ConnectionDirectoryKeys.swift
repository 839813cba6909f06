/// Where a deployment's gateways publish their open connections and hear its operators'
/// disconnects (`GET`/`DELETE /admin/connections`): shared by the gateway that writes and
/// the API that reads. Named by the deployment (`--deployment-name`), so that deployments
/// sharing one Redis neither list nor close each other's sockets.
public struct ConnectionDirectoryKeys: Sendable {
    /// `roboscope:<deployment>:ws:connections:<gateway>`: one JSON document per gateway,
    /// with a TTL.
    public let keyPrefix: String
    /// `{"tenant", "subject"}` published here: every gateway of the deployment closes the
    /// matching sockets.
    public let disconnectChannel: String

    public init(deployment: String) {
        keyPrefix = "roboscope:\(deployment):ws:connections:"
        disconnectChannel = "roboscope:\(deployment):ws:disconnect"
    }
}
