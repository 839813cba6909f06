import Foundation
import Logging
import RoboscopeDomain

/// One JSON object per line on standard error (`--log-format json`), for log
/// collectors: `time` (RFC 3339, UTC, `Z`), `level`, `label`, `message`, `source` (the
/// module that logged) and every metadata key (such as `request_id`) at the top level.
/// A metadata key that is one of those names is kept under `meta_<key>` (a JWK Set's
/// `source` in "reload failed"), never overwritten. The metadata provider's keys come
/// first (`trace_id`, `span_id` of the current span: `CommonOptions`).
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields: [String: String] = [:]
        let provided = metadataProvider?.get() ?? [:]
        let merged = provided.merging(metadata, uniquingKeysWith: { $1 }).merging(
            event.metadata ?? [:], uniquingKeysWith: { $1 })
        for (key, value) in merged {
            fields[Self.reserved.contains(key) ? "meta_" + key : key] = "\(value)"
        }
        fields["time"] = Self.time(Date())
        fields["level"] = event.level.rawValue
        fields["label"] = label
        fields["message"] = "\(event.message)"
        fields["source"] = event.source
        var line = JSONValue.object(fields.mapValues(JSONValue.string)).canonicalJSON
        line.append(0x0A)
        FileHandle.standardError.write(Data(line))
    }

    static let reserved: Set<String> = ["time", "level", "label", "message", "source"]

    /// `2026-11-27T15:12:11.123Z`: RFC 3339 in UTC, milliseconds, with its zone.
    static func time(_ date: Date) -> String {
        date.formatted(
            Date.ISO8601FormatStyle(includingFractionalSeconds: true, timeZone: TimeZone(identifier: "UTC")!))
    }
}
