/// XOR masking of payloads (RFC 6455 section 5.3), eight bytes at a time: a 16 MiB
/// message byte by byte is slow enough to matter in a debug build.
enum Masking {
    /// Masks `buffer[start...]` with `key` starting at key byte `offset`; returns the
    /// key offset for the byte after the last one.
    static func apply(_ key: [UInt8], offset: Int, to buffer: inout [UInt8], from start: Int) -> Int {
        let count = buffer.count - start
        guard count > 0 else { return offset }
        // The key rotated so that its byte `offset` comes first, repeated to 8 bytes.
        var rotated: UInt64 = 0
        for index in 0..<8 { rotated |= UInt64(key[(offset + index) & 3]) << (8 * index) }
        buffer.withUnsafeMutableBytes { raw in
            let base = raw.baseAddress! + start
            var index = 0
            while index + 8 <= count {
                let word = base.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                base.storeBytes(of: word ^ rotated.littleEndian, toByteOffset: index, as: UInt64.self)
                index += 8
            }
            while index < count {
                base.storeBytes(
                    of: base.load(fromByteOffset: index, as: UInt8.self) ^ key[(offset + index) & 3],
                    toByteOffset: index, as: UInt8.self)
                index += 1
            }
        }
        return (offset + count) & 3
    }
}
