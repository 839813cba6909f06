import CZlib
import Foundation

/// Request bodies sent with `Content-Encoding: gzip` (docs/client-kit.md, "Compression"):
/// bulk uploads and other large writes cost a field device a fraction of their bytes
/// (1,000 markers: about 0.2 of the JSON). The server inflates them with its body limit
/// applied to the inflated size.
public struct RequestCompression: Sendable, Hashable {
    /// Bodies of at least this many bytes are compressed; smaller ones save less than a
    /// gzip member's own 18 bytes and the server's work cost. Nil sends every body as it is.
    public var threshold: Int?

    public init(threshold: Int? = 1024) {
        self.threshold = threshold
    }

    /// Compressing nothing (a server that does not accept `Content-Encoding`).
    public static let off = RequestCompression(threshold: nil)

    /// The body as sent, and its `Content-Encoding` (nil: as it is).
    func encode(_ body: Data) -> (body: Data, encoding: String?) {
        guard let threshold, body.count >= threshold, let compressed = Self.gzip(body), compressed.count < body.count
        else {
            return (body, nil)
        }
        return (compressed, "gzip")
    }

    /// `data` as one gzip member (RFC 1952) by zlib, or nil if zlib fails.
    static func gzip(_ data: Data) -> Data? {
        var stream = z_stream()
        // windowBits 15 + 16: zlib writes the gzip header and trailer itself.
        guard
            deflateInit2_(
                &stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY,
                ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK
        else { return nil }
        defer { deflateEnd(&stream) }
        var output = Data(count: Int(deflateBound(&stream, uLong(data.count))))
        let written: Int? = data.withUnsafeBytes { input in
            output.withUnsafeMutableBytes { buffer in
                stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = buffer.bindMemory(to: Bytef.self).baseAddress
                stream.avail_out = uInt(buffer.count)
                // The bound holds the whole member: one call ends it.
                return deflate(&stream, Z_FINISH) == Z_STREAM_END ? Int(stream.total_out) : nil
            }
        }
        guard let written else { return nil }
        output.count = written
        return output
    }

    /// A gzip member's content, or nil when it is not one (`InMemoryService` reads the
    /// bodies the kit compressed, as the server does).
    @_spi(Testing) public static func gunzip(_ data: Data) -> Data? {
        var stream = z_stream()
        guard inflateInit2_(&stream, 15 + 16, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            return nil
        }
        defer { inflateEnd(&stream) }
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var status = Z_OK
        data.withUnsafeBytes { input in
            stream.next_in = UnsafeMutablePointer(mutating: input.bindMemory(to: Bytef.self).baseAddress)
            stream.avail_in = uInt(input.count)
            while status == Z_OK {
                chunk.withUnsafeMutableBytes { buffer in
                    stream.next_out = buffer.bindMemory(to: Bytef.self).baseAddress
                    stream.avail_out = uInt(buffer.count)
                    status = inflate(&stream, Z_NO_FLUSH)
                    output.append(
                        buffer.bindMemory(to: UInt8.self).baseAddress!, count: buffer.count - Int(stream.avail_out))
                }
            }
        }
        return status == Z_STREAM_END ? output : nil
    }
}
