/// The data of a stored event in the shape REST returns (whole-second timestamps,
/// the entity's fields), decoded from the stored JSON.
public enum StoredData {
    /// The entity the event leaves behind; for `*.deleted`, the deletion's ids.
    public static func render(streamType: String, type: String, data: [UInt8]) throws -> any JSONWritable {
        let decoder = JSONValueDecoder()
        let bytes = try JSONParser.parse(data)
        if type.hasSuffix(".deleted") {
            return try decoder.decode(Deletion.self, from: bytes)
        }
        switch streamType {
        case StreamType.space.rawValue: return try decoder.decode(Space.self, from: bytes)
        case StreamType.workSession.rawValue: return try decoder.decode(WorkSession.self, from: bytes)
        case StreamType.marker.rawValue: return try decoder.decode(Marker.self, from: bytes)
        case StreamType.markerDetails.rawValue: return try decoder.decode(MarkerDetails.self, from: bytes)
        case StreamType.workSessionLock.rawValue: return try decoder.decode(LockAudit.self, from: bytes)
        case StreamType.tokenRevocation.rawValue: return try decoder.decode(StoredRevocation.self, from: bytes)
        default: return bytes
        }
    }

    /// The same as a JSON object (for comparing fields).
    public static func object(streamType: String, type: String, data: [UInt8]) throws -> JSONObject {
        let rendered = try render(streamType: streamType, type: type, data: data)
        return try JSONParser.parse(rendered.jsonBytes(.wire)).objectValue ?? [:]
    }
}
