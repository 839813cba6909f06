/// permessage-deflate (RFC 7692) as one connection agreed it in its upgrade.
public struct PerMessageDeflate: Equatable, Sendable {
    /// Whether the server's compressor may refer to earlier messages (false when the
    /// client asked for `server_no_context_takeover`).
    public var serverContextTakeover: Bool
    /// Whether the client's compressor may: the server asks it not to (section 7.1.1.2),
    /// so that it keeps no window per connection between messages.
    public var clientContextTakeover: Bool
    /// The window the server compresses with; 8 means it sends every message uncompressed
    /// (zlib cannot make raw DEFLATE with a 256-byte window).
    public var serverMaxWindowBits: Int
    /// The window the client compresses with (the server inflates with 15, which reads all).
    public var clientMaxWindowBits: Int

    public init(
        serverContextTakeover: Bool, clientContextTakeover: Bool, serverMaxWindowBits: Int = 15,
        clientMaxWindowBits: Int = 15
    ) {
        self.serverContextTakeover = serverContextTakeover
        self.clientContextTakeover = clientContextTakeover
        self.serverMaxWindowBits = serverMaxWindowBits
        self.clientMaxWindowBits = clientMaxWindowBits
    }

    /// The token of the extension in `Sec-WebSocket-Extensions`.
    public static let token = "permessage-deflate"

    /// What a client offers: the extension with room for the server to bound our window.
    public static let clientOffer = "permessage-deflate; client_max_window_bits"

    /// The window the server's messages are compressed with, or nil when they go uncompressed.
    public var serverCompressionWindow: Int? {
        MessageDeflater.windowBitsRange.contains(serverMaxWindowBits) ? serverMaxWindowBits : nil
    }

    // MARK: Server

    /// The first offer in a client's `Sec-WebSocket-Extensions` that the server accepts,
    /// with the value of the header that accepts it; nil when none is acceptable (the
    /// connection then runs uncompressed, as RFC 7692 allows). `maxWindowBits` (9...15)
    /// bounds the server's window, and the client's when the client lets us.
    public static func accept(offers header: String?, maxWindowBits: Int) -> (PerMessageDeflate, response: String)? {
        guard let header else { return nil }
        for offer in ExtensionList.parse(header) where offer.name == token {
            guard let parameters = OfferParameters(offer.parameters) else { continue }
            let serverBits = min(parameters.serverMaxWindowBits ?? 15, maxWindowBits)
            var response = [token, "client_no_context_takeover"]
            if parameters.serverNoContextTakeover { response.append("server_no_context_takeover") }
            if serverBits < 15 { response.append("server_max_window_bits=\(serverBits)") }
            var clientBits = 15
            if let offered = parameters.clientMaxWindowBits {
                // Absent from the offer, the parameter may not be in the answer (section 7.1.2.2).
                clientBits = min(offered ?? 15, maxWindowBits)
                if clientBits < 15 { response.append("client_max_window_bits=\(clientBits)") }
            }
            let agreed = PerMessageDeflate(
                serverContextTakeover: !parameters.serverNoContextTakeover, clientContextTakeover: false,
                serverMaxWindowBits: serverBits, clientMaxWindowBits: clientBits)
            return (agreed, response.joined(separator: "; "))
        }
        return nil
    }

    // MARK: Client

    /// What a server's answer to `clientOffer` agreed: nil when it sent no extension,
    /// an error naming what is wrong when it answered something we did not offer.
    public static func accepted(response header: String?) -> Result<PerMessageDeflate?, ExtensionError> {
        guard let header, !header.allSatisfy({ $0 == " " || $0 == "\t" }) else { return .success(nil) }
        let answers = ExtensionList.parse(header)
        guard answers.count == 1, let answer = answers.first, answer.name == token else {
            return .failure(ExtensionError("the server answered extensions we did not offer: \(header)"))
        }
        guard let parameters = OfferParameters(answer.parameters), parameters.clientMaxWindowBits != .some(nil) else {
            return .failure(ExtensionError("the server's permessage-deflate parameters are malformed: \(header)"))
        }
        return .success(
            PerMessageDeflate(
                serverContextTakeover: !parameters.serverNoContextTakeover,
                clientContextTakeover: !parameters.clientNoContextTakeover,
                serverMaxWindowBits: parameters.serverMaxWindowBits ?? 15,
                clientMaxWindowBits: (parameters.clientMaxWindowBits ?? nil) ?? 15))
    }
}

public struct ExtensionError: Error, Equatable, CustomStringConvertible {
    public var description: String
    init(_ description: String) { self.description = description }
}

/// The parameters of one permessage-deflate offer or answer, each at most once and valid
/// (section 7.1), or nil.
struct OfferParameters {
    var serverNoContextTakeover = false
    var clientNoContextTakeover = false
    var serverMaxWindowBits: Int?
    /// Absent (nil), present without a value (.some(nil)), or with one.
    var clientMaxWindowBits: Int??

    init?(_ parameters: [(name: String, value: String?)]) {
        var seen: Set<String> = []
        for (name, value) in parameters {
            guard seen.insert(name).inserted else { return nil }
            switch name {
            case "server_no_context_takeover":
                guard value == nil else { return nil }
                serverNoContextTakeover = true
            case "client_no_context_takeover":
                guard value == nil else { return nil }
                clientNoContextTakeover = true
            case "server_max_window_bits":
                guard let bits = value.flatMap(Self.windowBits) else { return nil }
                serverMaxWindowBits = bits
            case "client_max_window_bits":
                if let value {
                    guard let bits = Self.windowBits(value) else { return nil }
                    clientMaxWindowBits = .some(bits)
                } else {
                    clientMaxWindowBits = .some(nil)
                }
            default:
                return nil
            }
        }
    }

    /// 8 to 15, written without leading zeros (section 7.1.2.1).
    static func windowBits(_ text: String) -> Int? {
        guard let first = text.first, first != "0", text.count <= 2, let bits = Int(text), (8...15).contains(bits)
        else { return nil }
        return bits
    }
}

/// `Sec-WebSocket-Extensions` (RFC 6455 section 9.1): extensions separated by commas,
/// each a token with `;`-separated parameters, values bare or quoted.
enum ExtensionList {
    static func parse(_ header: String) -> [(name: String, parameters: [(name: String, value: String?)])] {
        splitOutsideQuotes(header, on: ",").compactMap { item in
            let parts = splitOutsideQuotes(item, on: ";").map { $0.trimmingSpaces() }
            guard let name = parts.first, !name.isEmpty else { return nil }
            let parameters = parts.dropFirst().map { part -> (name: String, value: String?) in
                guard let equals = part.firstIndex(of: "=") else { return (part.lowercased(), nil) }
                var value = Substring(part[part.index(after: equals)...]).trimmingSpaces()
                if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                    value = String(value.dropFirst().dropLast())
                }
                return (Substring(part[..<equals]).trimmingSpaces().lowercased(), value)
            }
            return (name.lowercased(), parameters)
        }
    }

    private static func splitOutsideQuotes(_ text: some StringProtocol, on separator: Character) -> [Substring] {
        var parts: [Substring] = []
        var start = text.startIndex
        var quoted = false
        let whole = Substring(text)
        for index in whole.indices {
            if whole[index] == "\"" { quoted.toggle() }
            if whole[index] == separator, !quoted {
                parts.append(whole[start..<index])
                start = whole.index(after: index)
            }
        }
        parts.append(whole[start...])
        return parts
    }
}
