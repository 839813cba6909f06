import Synchronization
import WebSocketCodec

/// One encoded frame that many connections write: an event is serialized and framed
/// once per topic, and every subscriber's queue holds a reference to these bytes.
/// The storage never moves, so `writev` can point into it.
///
/// A data frame also keeps where its payload starts, so that it can be compressed
/// (permessage-deflate) once per window size, the first time a connection that agreed
/// that window queues it: every such subscriber then shares the compressed bytes too.
///
/// Sendable: the compressed forms are kept under a lock (shards on other threads may ask
/// at once), and the bytes are written once, in `init`, and only read after, which is
/// what the one unchecked property below claims.
final class SharedFrame: Sendable {
    nonisolated(unsafe) let bytes: UnsafeMutableRawBufferPointer
    /// The opcode and payload offset of a data frame that may be compressed; nil otherwise.
    private let data: (opcode: Opcode, payloadStart: Int)?
    /// The frame compressed with each window asked so far; nil when that did not help
    /// (a reference to itself would be a cycle).
    private let compressed = Mutex<[Int: SharedFrame?]>([:])

    init(_ frame: [UInt8]) {
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: frame.count, alignment: 1)
        frame.withUnsafeBytes { bytes.copyMemory(from: $0) }
        self.bytes = bytes
        data = nil
    }

    /// An uncompressed data frame carrying `payload`, which may be compressed later.
    init(_ opcode: Opcode, payload: [UInt8]) {
        let header = FrameEncoder.header(opcode, length: payload.count)
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: header.count + payload.count, alignment: 1)
        header.withUnsafeBytes { bytes.copyMemory(from: $0) }
        payload.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: bytes[header.count...]).copyMemory(from: $0) }
        self.bytes = bytes
        data = (opcode, header.count)
    }

    /// A text frame carrying `payload`.
    convenience init(text payload: [UInt8]) {
        self.init(.text, payload: payload)
    }

    deinit {
        bytes.deallocate()
    }

    var count: Int { bytes.count }

    /// The payload of a data frame (nil for others).
    var payload: UnsafeRawBufferPointer? {
        data.map { UnsafeRawBufferPointer(rebasing: bytes[$0.payloadStart...]) }
    }

    var opcode: Opcode? { data?.opcode }

    /// This frame as a connection that agreed `windowBits` gets it: compressed by
    /// `deflater` (a compressor without context, for that window) the first time any
    /// connection asks, shared after. Frames that are not data, are under `threshold`
    /// or do not shrink stay as they are.
    /// `compressed` is told the payload's size before and after when this call ran the compressor.
    func deflated(by deflater: MessageDeflater, threshold: Int, compressed ran: (Int, Int) -> Void) -> SharedFrame {
        guard let data, bytes.count - data.payloadStart >= threshold else { return self }
        if let done = compressed.withLock({ $0[deflater.windowBits] }) { return done ?? self }
        let payload = deflater.compress(UnsafeRawBufferPointer(rebasing: bytes[data.payloadStart...]))
        ran(bytes.count - data.payloadStart, payload.count)
        let made =
            payload.count < bytes.count - data.payloadStart
            ? SharedFrame(FrameEncoder.frame(data.opcode, payload, compressed: true)) : self
        return compressed.withLock { cache in
            // Two shards may have compressed it at once: the first one kept wins.
            if let first = cache[deflater.windowBits] { return first ?? self }
            cache[deflater.windowBits] = .some(made === self ? nil : made)
            return made
        }
    }
}
