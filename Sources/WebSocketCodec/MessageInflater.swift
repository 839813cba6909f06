import CZlib

/// Decompresses permessage-deflate messages, bounded: a message whose inflated size would
/// pass `limit` fails as soon as it does, so a deflate bomb never takes more memory than
/// the limit allows.
///
/// With context the window carries from one message to the next (the peer compresses
/// with context takeover); without, every message starts afresh.
///
/// Not thread-safe: one owner at a time.
public final class MessageInflater {
    public enum Failure: Error, Equatable {
        /// The inflated message would pass the limit.
        case tooBig
        /// Not a DEFLATE stream, or one that refers to bytes it never had.
        case corrupt(String)
    }

    public let keepsContext: Bool
    private let stream: UnsafeMutablePointer<z_stream>

    /// Inflates with a 32 KiB window, which reads the output of every smaller window too.
    public init(keepsContext: Bool) {
        self.keepsContext = keepsContext
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let status = inflateInit2_(stream, -15, zlibVersion(), Int32(MemoryLayout<z_stream>.size))
        precondition(status == Z_OK, "inflateInit2 failed: \(status)")
    }

    deinit {
        inflateEnd(stream)
        stream.deallocate()
    }

    /// Where inflation writes before the bytes are appended to the message: kept between
    /// messages (a connection's inflater reads many), made on first use.
    private var chunk: [UInt8] = []

    /// The message that `compressed` (one message's payload, as sent) holds, at most `limit` bytes.
    public func inflate(_ compressed: [UInt8], limit: Int) throws(Failure) -> [UInt8] {
        defer { if !keepsContext { inflateReset(stream) } }
        if chunk.isEmpty { chunk = [UInt8](repeating: 0, count: 16 * 1024) }
        var output: [UInt8] = []
        output.reserveCapacity(min(limit, compressed.count * 4))
        // The message, then the tail the sender removed: two inputs, no copy.
        let ended = try compressed.withUnsafeBufferPointer { (message) throws(Failure) in
            try inflate(message, into: &output, limit: limit)
        }
        if !ended {
            _ = try MessageDeflater.flushTail.withUnsafeBufferPointer { (tail) throws(Failure) in
                try inflate(tail, into: &output, limit: limit)
            }
        }
        return output
    }

    /// Inflates `input` onto `output`; true when it held a final block (the rest of the
    /// message is then ignored).
    private func inflate(
        _ input: UnsafeBufferPointer<UInt8>, into output: inout [UInt8], limit: Int
    ) throws(Failure) -> Bool {
        guard input.count > 0 else { return false }
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
        stream.pointee.avail_in = uInt(input.count)
        defer { stream.pointee.next_in = nil; stream.pointee.avail_in = 0 }
        var status: Int32 = Z_OK
        repeat {
            let produced = chunk.withUnsafeMutableBufferPointer { buffer -> Int in
                stream.pointee.next_out = buffer.baseAddress
                stream.pointee.avail_out = uInt(buffer.count)
                status = CZlib.inflate(stream, Z_SYNC_FLUSH)
                return buffer.count - Int(stream.pointee.avail_out)
            }
            if status == Z_DATA_ERROR || status == Z_NEED_DICT || status == Z_STREAM_ERROR || status == Z_MEM_ERROR {
                let message = stream.pointee.msg.map { String(cString: $0) } ?? "status \(status)"
                throw .corrupt(message)
            }
            guard output.count + produced <= limit else { throw .tooBig }
            output.append(contentsOf: chunk[..<produced])
            if status == Z_BUF_ERROR, produced == 0 { break }
            if status == Z_STREAM_END {
                // A final block ends this DEFLATE stream; the next message begins a new
                // one (RFC 7692 section 7.2.3.1), so the window starts empty again.
                inflateReset(stream)
                return true
            }
        } while stream.pointee.avail_in > 0 || stream.pointee.avail_out == 0
        return false
    }
}
