import Crypto

/// The server's answers to an upgrade request.
public enum HandshakeResponse {
    static let magic = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

    /// `Sec-WebSocket-Accept`: base64 of the SHA-1 of the key and the RFC's GUID.
    public static func acceptValue(forKey key: String) -> String {
        Base64.encode(Array(Insecure.SHA1.hash(data: Array((key + magic).utf8))))
    }

    /// 101 Switching Protocols for `request`, with the extensions agreed (`Sec-WebSocket-Extensions`).
    public static func switchingProtocols(_ request: UpgradeRequest, extensions: String? = nil) -> [UInt8] {
        Array(
            ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                + "Sec-WebSocket-Accept: \(acceptValue(forKey: request.key))\r\n"
                + (extensions.map { "Sec-WebSocket-Extensions: \($0)\r\n" } ?? "") + "\r\n").utf8)
    }

    /// A refusal with a JSON error body in the REST API's shape; the connection closes after it.
    public static func rejection(_ rejection: UpgradeRejection) -> [UInt8] {
        let reason: String
        switch rejection.status {
        case 400: reason = "Bad Request"
        case 401: reason = "Unauthorized"
        case 404: reason = "Not Found"
        case 405: reason = "Method Not Allowed"
        case 426: reason = "Upgrade Required"
        case 429: reason = "Too Many Requests"
        case 431: reason = "Request Header Fields Too Large"
        case 503: reason = "Service Unavailable"
        default: reason = "Error"
        }
        let escaped = rejection.message.jsonEscaped()
        let body = "{\"error\":{\"code\":\"bad_upgrade\",\"message\":\"\(escaped)\"}}"
        var head = "HTTP/1.1 \(rejection.status) \(reason)\r\nContent-Type: application/json\r\n"
        if rejection.status == 426 { head += "Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n" }
        if rejection.status == 405 { head += "Allow: GET\r\n" }
        if rejection.status == 401 { head += "WWW-Authenticate: Bearer\r\n" }
        head += "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n"
        return Array((head + body).utf8)
    }
}

extension String {
    /// The text as the inside of a JSON string: a 404 names the client's path, which may
    /// hold quotes, backslashes or control characters.
    func jsonEscaped() -> String {
        var out = ""
        for scalar in unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out
    }
}
