import Foundation
import Logging
import RoboscopeDomain

/// One JSON object per line on standard error (`--log-format json`), for log
/// collectors: `time`, `level`, `label`, `message`, `source` and every metadata key
/// (such as `request_id`) at the top level.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var fields: [String: String] = [:]
        for (key, value) in metadata.merging(event.metadata ?? [:], uniquingKeysWith: { $1 }) {
            fields[key] = "\(value)"
        }
        fields["time"] = Date().formatted(.iso8601.year().month().day().time(includingFractionalSeconds: true))
        fields["level"] = event.level.rawValue
        fields["label"] = label
        fields["message"] = "\(event.message)"
        fields["source"] = event.source
        var line = JSONValue.object(fields.mapValues(JSONValue.string)).canonicalJSON
        line.append(0x0A)
        FileHandle.standardError.write(Data(line))
    }
}
