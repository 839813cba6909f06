import WebSocketCodec

/// One encoded frame that many connections write: an event is serialized and framed
/// once per topic, and every subscriber's queue holds a reference to these bytes.
/// The storage never moves, so `writev` can point into it.
///
/// `@unchecked Sendable`: the bytes are written once, in `init`, and only read after.
final class SharedFrame: @unchecked Sendable {
    let bytes: UnsafeMutableRawBufferPointer

    init(_ frame: [UInt8]) {
        bytes = .allocate(byteCount: frame.count, alignment: 1)
        frame.withUnsafeBytes { bytes.copyMemory(from: $0) }
    }

    /// A text frame carrying `payload`.
    convenience init(text payload: [UInt8]) {
        self.init(FrameEncoder.frame(.text, payload))
    }

    deinit {
        bytes.deallocate()
    }

    var count: Int { bytes.count }
}
