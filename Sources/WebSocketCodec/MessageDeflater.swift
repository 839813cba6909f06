import CZlib

/// Compresses whole WebSocket messages as permessage-deflate (RFC 7692 section 7.2.1)
/// frames them: raw DEFLATE flushed to a byte boundary, without the `00 00 FF FF` that
/// the flush ends with.
///
/// Without context (`keepsContext` false) every message is compressed on its own, so the
/// same bytes serve every connection that negotiated the same window: the gateway's
/// broadcasts. With context, each message may refer to the ones before it, which only
/// the one connection that received them all in this order can decode (a catch-up).
///
/// Not thread-safe: one owner at a time.
public final class MessageDeflater {
    public let windowBits: Int
    public let keepsContext: Bool
    private let stream: UnsafeMutablePointer<z_stream>

    /// Raw DEFLATE cannot use a 256-byte window in zlib 1.2.9 and later, so a peer that
    /// asked for `server_max_window_bits=8` gets its messages uncompressed.
    public static let windowBitsRange = 9...15

    /// `windowBits` must be in `windowBitsRange`.
    public init(windowBits: Int, keepsContext: Bool, level: Int32 = Z_DEFAULT_COMPRESSION) {
        precondition(Self.windowBitsRange.contains(windowBits), "window bits \(windowBits) outside 9...15")
        self.windowBits = windowBits
        self.keepsContext = keepsContext
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        // memLevel 8 is zlib's default: 2^(windowBits+2) + 2^17 bytes of state.
        let status = deflateInit2_(
            stream, level, Z_DEFLATED, -Int32(windowBits), 8, Z_DEFAULT_STRATEGY,
            zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK, "deflateInit2 failed: \(status)")
    }

    deinit {
        deflateEnd(stream)
        stream.deallocate()
    }

    /// `payload` compressed; without context the compressor starts afresh for the next one.
    public func compress(_ payload: UnsafeRawBufferPointer) -> [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(payload.count / 2 + 64)
        var chunk = [UInt8](repeating: 0, count: max(256, min(payload.count + 64, 64 * 1024)))
        let input = UnsafeMutablePointer(mutating: payload.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.next_in = input
        stream.pointee.avail_in = uInt(payload.count)
        repeat {
            let produced = chunk.withUnsafeMutableBufferPointer { buffer -> Int in
                stream.pointee.next_out = buffer.baseAddress
                stream.pointee.avail_out = uInt(buffer.count)
                // Z_SYNC_FLUSH with memory to spare never fails; Z_BUF_ERROR only says "no progress".
                _ = deflate(stream, Z_SYNC_FLUSH)
                return buffer.count - Int(stream.pointee.avail_out)
            }
            output.append(contentsOf: chunk[..<produced])
        } while stream.pointee.avail_out == 0
        stream.pointee.next_in = nil
        if !keepsContext { deflateReset(stream) }
        if output.count >= 4, output.suffix(4).elementsEqual(MessageDeflater.flushTail) {
            output.removeLast(4)
        }
        // An empty message right after a flush makes zlib write nothing at all (it skips a
        // second flush in a row); the receiver's added tail must then read as an empty
        // stored block, whose header is this one byte (RFC 7692 section 7.2.3.6).
        return output.isEmpty ? [0x00] : output
    }

    public func compress(_ payload: [UInt8]) -> [UInt8] {
        payload.withUnsafeBytes { compress($0) }
    }

    /// What a sync flush ends with; removed by the sender, added back by the receiver.
    static let flushTail: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]
}
