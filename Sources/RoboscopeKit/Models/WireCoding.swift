import Foundation

/// The coders the iOS app uses: snake_case keys spelled in each model's `CodingKeys`,
/// dates in RFC 3339 with whole seconds (`.iso8601`).
public enum WireCoding {
    /// A `JSONDecoder` with `.iso8601` dates, as the iOS app decodes.
    public static func decoder() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return decoder
    }

    /// A `JSONEncoder` with `.iso8601` dates and sorted keys.
    public static func encoder() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }
}
