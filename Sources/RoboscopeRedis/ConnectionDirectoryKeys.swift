/// Where gateways publish their open connections and hear operators' disconnects
/// (`GET`/`DELETE /admin/connections`): shared by the gateway that writes and the API
/// that reads.
public enum ConnectionDirectoryKeys {
    /// `roboscope:ws:connections:<gateway>`: one JSON document per gateway, with a TTL.
    public static let keyPrefix = "roboscope:ws:connections:"
    /// `{"tenant", "subject"}` published here: every gateway closes the matching sockets.
    public static let disconnectChannel = "roboscope:ws:disconnect"
}
