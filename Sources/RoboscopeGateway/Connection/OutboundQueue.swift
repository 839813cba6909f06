import CLinuxSystem
#if canImport(Glibc)
import Glibc
#endif

/// The frames waiting to be written to one socket, written with `writev` up to 64
/// at a time. Survives partial writes: `offset` is how much of the first frame left.
struct OutboundQueue {
    private var frames: [SharedFrame] = []
    private var head = 0
    private var offset = 0
    private(set) var byteCount = 0

    var isEmpty: Bool { head == frames.count }

    mutating func append(_ frame: SharedFrame) {
        frames.append(frame)
        byteCount += frame.count
    }

    /// Drops every frame not started yet, keeping a partly written one (the peer must
    /// get whole frames before a close frame).
    mutating func dropUnstarted() {
        let keep = offset > 0 ? 1 : 0
        for frame in frames[(head + keep)...] { byteCount -= frame.count }
        frames.removeSubrange((head + keep)...)
    }

    /// Writes until the queue is empty (true) or the socket would block (false).
    mutating func write(to fd: Int32) throws -> Bool {
        while !isEmpty {
            let written: IOResult<Int> = try withUnsafeTemporaryAllocation(of: iovec.self, capacity: 64) { vectors in
                var count = 0
                var index = head
                while index < frames.count, count < 64 {
                    let skip = index == head ? offset : 0
                    let frame = frames[index]
                    vectors[count] = iovec(iov_base: frame.bytes.baseAddress! + skip, iov_len: frame.count - skip)
                    count += 1
                    index += 1
                }
                return try Socket.writev(fd, vectors, count: count)
            }
            guard case .done(var count) = written else { return false }
            byteCount -= count
            while count > 0 {
                let left = frames[head].count - offset
                if count >= left {
                    count -= left
                    head += 1
                    offset = 0
                } else {
                    offset += count
                    count = 0
                }
            }
            if head > 64 || isEmpty {
                frames.removeFirst(head)
                head = 0
            }
        }
        return true
    }
}
