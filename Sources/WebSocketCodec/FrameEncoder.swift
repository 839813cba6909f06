/// Builds frames. The server sends unmasked frames; clients (tests, the load
/// generator) pass a mask key.
public enum FrameEncoder {
    /// One complete frame.
    /// `compressed`: the payload is permessage-deflate output (RSV1 set).
    public static func frame(
        _ opcode: Opcode, _ payload: [UInt8], fin: Bool = true, maskKey: [UInt8]? = nil, compressed: Bool = false
    ) -> [UInt8] {
        var bytes = header(opcode, length: payload.count, fin: fin, maskKey: maskKey, compressed: compressed)
        let start = bytes.count
        bytes.append(contentsOf: payload)
        if let maskKey {
            _ = Masking.apply(maskKey, offset: 0, to: &bytes, from: start)
        }
        return bytes
    }

    /// A close frame with a status code and a reason cut to fit the 125-byte limit
    /// (on a UTF-8 boundary).
    public static func close(_ code: CloseCode, reason: String = "", maskKey: [UInt8]? = nil) -> [UInt8] {
        var payload = [UInt8(code.rawValue >> 8), UInt8(code.rawValue & 0xFF)]
        var reasonBytes = Array(reason.utf8)
        if reasonBytes.count > 123 {
            var end = 123
            while end > 0, reasonBytes[end] & 0xC0 == 0x80 { end -= 1 }
            reasonBytes = Array(reasonBytes[..<end])
        }
        payload.append(contentsOf: reasonBytes)
        return frame(.close, payload, maskKey: maskKey)
    }

    /// The header of a frame carrying `length` payload bytes.
    public static func header(
        _ opcode: Opcode, length: Int, fin: Bool = true, maskKey: [UInt8]? = nil, compressed: Bool = false
    ) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(14 + (maskKey == nil ? 0 : length))
        bytes.append((fin ? 0x80 : 0) | (compressed ? 0x40 : 0) | opcode.rawValue)
        let maskBit: UInt8 = maskKey == nil ? 0 : 0x80
        switch length {
        case 0...125:
            bytes.append(maskBit | UInt8(length))
        case 126...0xFFFF:
            bytes.append(maskBit | 126)
            bytes.append(UInt8(length >> 8)); bytes.append(UInt8(length & 0xFF))
        default:
            bytes.append(maskBit | 127)
            for shift in stride(from: 56, through: 0, by: -8) {
                bytes.append(UInt8((UInt64(length) >> UInt64(shift)) & 0xFF))
            }
        }
        if let maskKey { bytes.append(contentsOf: maskKey) }
        return bytes
    }
}
