import CompressNIO
import RoboscopeWire

/// A content coding the service speaks on HTTP (RFC 9110 §8.4): gzip, and deflate
/// (which HTTP means as the zlib format, RFC 1950).
enum ContentCoding: String, Sendable, CaseIterable {
    case gzip
    case deflate

    var algorithm: CompressionAlgorithm {
        switch self {
        case .gzip: return .gzip()
        case .deflate: return .zlib()
        }
    }

    /// The coding to answer with, from the request's `Accept-Encoding` values: gzip
    /// before deflate, either when its weight (or `*`'s) is above zero; nil for none
    /// (identity). A malformed weight counts as 1, as most servers read it.
    static func preferred(accepting values: [String]) -> ContentCoding? {
        var weights: [String: Double] = [:]
        for item in values.flatMap({ $0.split(separator: ",") }) {
            let parts = item.split(separator: ";").map { HeaderText.lowercased(HeaderText.trimmed($0)) }
            guard let name = parts.first, !name.isEmpty else { continue }
            var weight = 1.0
            for parameter in parts.dropFirst() where parameter.hasPrefix("q=") {
                weight = Double(parameter.dropFirst(2)) ?? 1
            }
            weights[name] = weight
        }
        let anything = weights["*"] ?? 0
        return allCases.first { (weights[$0.rawValue] ?? anything) > 0 }
    }

    /// The coding a request body says it has (`Content-Encoding`); nil for identity.
    /// Throws for one the service does not inflate.
    static func of(body value: String) -> Result<ContentCoding?, UnknownCoding> {
        let name = HeaderText.lowercased(HeaderText.trimmed(value))
        if name.isEmpty || name == "identity" { return .success(nil) }
        if name == "x-gzip" { return .success(.gzip) }
        guard let coding = ContentCoding(rawValue: name) else { return .failure(UnknownCoding(name: name)) }
        return .success(coding)
    }

    struct UnknownCoding: Error {
        let name: String
    }
}
