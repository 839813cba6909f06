import Foundation
import Synchronization
import WebSocketCodec
import CLinuxSystem
#if canImport(Glibc)
import Glibc
#endif

/// N WebSocket connections read by a few epoll threads. Each thread notes, per
/// received `marker.created` event, the marker id and when it arrived; latencies are
/// matched against the writer's times at the end, so readers never share a lock.
final class Subscribers: Sendable {
    struct Receipt: Sendable { var id: [UInt8]; var at: Int64 }

    /// One reader thread's sockets and tallies. Its sockets' message readers and its
    /// receipts are locals of the thread; what others read is atomic or handed over at the end.
    private final class Reader: Sendable {
        let epoll = epoll_create1(0)
        let sockets = Mutex<[Int32]>([])
        let messages = Atomic<Int>(0)
        /// Messages that carry a write (the receipts), apart from acks and presence.
        let deliveries = Atomic<Int>(0)
        let subscribed = Atomic<Int>(0)
        let closed = Atomic<Int>(0)
        let receipts = Mutex<[Receipt]>([])
        /// Connections opened, by the index of the session they follow.
        let followers = Mutex<[Int: Int]>([:])
        /// Presence mode: `present` answers and errors received.
        let presents = Atomic<Int>(0)
        let errors = Atomic<Int>(0)
        /// `--deflate-shared`: distinct compressed messages inflated (the rest were copies).
        let inflations = Atomic<Int>(0)
    }

    private let readers: [Reader]
    private let options: LoadOptions
    private let stop = Atomic<Bool>(false)
    private let done = DispatchSemaphore(value: 0)

    init(options: LoadOptions) {
        self.options = options
        readers = (0..<options.threads).map { _ in Reader() }
    }

    /// Connects and upgrades every socket (and subscribes in gateway mode); returns how many opened.
    func open() -> Int {
        let group = DispatchGroup()
        let perThread = (options.connections + options.threads - 1) / options.threads
        for (index, reader) in readers.enumerated() {
            group.enter()
            Thread {
                for offset in 0..<max(0, min(perThread, self.options.connections - index * perThread)) {
                    let number = index * perThread + offset
                    guard let fd = self.upgrade(session: self.options.session(number)) else { continue }
                    reader.followers.withLock { $0[number % max(1, self.options.sessions.count), default: 0] += 1 }
                    var event = epoll_event()
                    event.events = EPOLLIN.rawValue
                    event.data.fd = fd
                    _ = epoll_ctl(reader.epoll, EPOLL_CTL_ADD, fd, &event)
                    reader.sockets.withLock { $0.append(fd) }
                }
                group.leave()
            }.start()
        }
        group.wait()
        return readers.reduce(0) { $0 + $1.sockets.withLock(\.count) }
    }

    private func upgrade(session: String) -> Int32? {
        guard let fd = Blocking.connect(port: options.wsPort, from: options.sourceAddress) else { return nil }
        let key = Base64.encode((0..<16).map { _ in UInt8.random(in: 0...255) })
        let request =
            "GET \(options.wsPath) HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            + "Sec-WebSocket-Key: \(key)\r\nSec-WebSocket-Version: 13\r\n" + options.authorizationLine
            + (Self.offer(options.deflate).map { "Sec-WebSocket-Extensions: \($0)\r\n" } ?? "") + "\r\n"
        guard Blocking.writeAll(fd, Array(request.utf8)),
            let (head, end) = Blocking.readUntil(fd, { UpgradeParser.headEnd($0) }),
            head.starts(with: Array("HTTP/1.1 101".utf8)), end + 4 == head.count,
            Self.agreed(options.deflate, head: String(decoding: head, as: UTF8.self))
        else {
            close(fd)
            return nil
        }
        if options.mode == .gateway {
            let subscribe = #"{"op":"subscribe","topic":"work_session:\#(session)"}"#
            _ = Blocking.writeAll(fd, FrameEncoder.frame(.text, Array(subscribe.utf8), maskKey: [1, 2, 3, 4]))
        }
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        return fd
    }

    private static func offer(_ deflate: LoadOptions.Deflate) -> String? {
        switch deflate {
        case .off: nil
        case .everyCopy: PerMessageDeflate.clientOffer
        case .distinctMessages: "permessage-deflate; server_no_context_takeover; client_max_window_bits"
        }
    }

    /// Whether the upgrade's answer agreed what the run needs.
    private static func agreed(_ deflate: LoadOptions.Deflate, head: String) -> Bool {
        switch deflate {
        case .off: true
        case .everyCopy: head.contains("permessage-deflate")
        case .distinctMessages: head.contains("permessage-deflate") && head.contains("server_no_context_takeover")
        }
    }

    func start() {
        for reader in readers {
            Thread {
                self.run(reader); self.done.signal()
            }.start()
        }
    }

    func finish() -> (receipts: [Receipt], messages: Int, closed: Int) {
        stop.store(true, ordering: .relaxed)
        for _ in readers { done.wait() }
        return (
            readers.flatMap { $0.receipts.withLock { $0 } },
            messageCount,
            readers.reduce(0) { $0 + $1.closed.load(ordering: .relaxed) }
        )
    }

    /// Connections that opened, by the index of the session each follows.
    var followersBySession: [Int: Int] {
        readers.reduce(into: [:]) { total, reader in
            reader.followers.withLock { total.merge($0, uniquingKeysWith: +) }
        }
    }

    var subscribedCount: Int { readers.reduce(0) { $0 + $1.subscribed.load(ordering: .relaxed) } }
    var presentCount: Int { readers.reduce(0) { $0 + $1.presents.load(ordering: .relaxed) } }
    var errorCount: Int { readers.reduce(0) { $0 + $1.errors.load(ordering: .relaxed) } }
    var messageCount: Int { readers.reduce(0) { $0 + $1.messages.load(ordering: .relaxed) } }
    var inflationCount: Int { readers.reduce(0) { $0 + $1.inflations.load(ordering: .relaxed) } }
    var deliveryCount: Int { readers.reduce(0) { $0 + $1.deliveries.load(ordering: .relaxed) } }

    private static let created = Array(#""type":"marker.created""#.utf8)
    private static let streamID = Array(#""stream_id":""#.utf8)
    private static let subscribedOp = Array(#""op":"subscribed""#.utf8)
    private static let presentOp = Array(#""op":"present""#.utf8)
    private static let errorOp = Array(#""op":"error""#.utf8)

    /// A `presence` op for a user this connection has not held: `fd` and a count make it new.
    private func presenceFrame(fd: Int32, count: Int) -> [UInt8] {
        let op = #"{"op":"presence","work_session_id":"\#(options.session)","user_id":"load-\#(fd)-\#(count)"}"#
        return FrameEncoder.frame(.text, Array(op.utf8), maskKey: [1, 2, 3, 4])
    }

    private func run(_ reader: Reader) {
        var events = [epoll_event](repeating: epoll_event(), count: 256)
        var buffer = [UInt8](repeating: 0, count: 256 * 1024)
        var sockets: [Int32: MessageReader] = [:]
        // The gateway keeps its context for the kit's offer; an inflater per connection then.
        let compression: MessageReader.Compression? =
            switch options.deflate {
            case .off: nil
            case .everyCopy: MessageReader.Compression(peerKeepsContext: true)
            case .distinctMessages: MessageReader.Compression(peerKeepsContext: false, leavesInflationToCaller: true)
            }
        // `.distinctMessages`: each compressed message inflated once, by its bytes (bounded).
        let inflater = MessageInflater(keepsContext: false)
        var inflated: [CompressedMessage: [UInt8]] = [:]
        for fd in reader.sockets.withLock({ $0 }) {
            sockets[fd] = MessageReader(role: .client, maxMessageSize: 64 << 20, compression: compression)
        }
        var receipts: [Receipt] = []
        defer { reader.receipts.withLock { $0 = receipts } }
        var sent: [Int32: Int] = [:]
        if options.mode == .presence {
            for fd in sockets.keys {
                sent[fd] = 1
                _ = Blocking.writeAll(fd, presenceFrame(fd: fd, count: 1))
            }
        }
        while !stop.load(ordering: .relaxed) {
            let ready = epoll_wait(reader.epoll, &events, 256, 100)
            guard ready > 0 else { continue }
            for index in 0..<Int(ready) {
                let fd = events[index].data.fd
                let count = read(fd, &buffer, buffer.count)
                if count == 0 || (count < 0 && errno != EAGAIN && errno != EINTR) {
                    epoll_ctl(reader.epoll, EPOLL_CTL_DEL, fd, nil)
                    sockets[fd] = nil
                    reader.closed.add(1, ordering: .relaxed)
                    close(fd)
                    continue
                }
                guard count > 0 else { continue }
                let at = nowMicros()
                var pongs: [[UInt8]] = []
                var answered = 0
                buffer[..<count].withUnsafeBytes { bytes in
                    sockets[fd]?.feed(bytes) { output in
                        var output = output
                        if case .compressed(let opcode, let compressed) = output {
                            let key = CompressedMessage(bytes: compressed)
                            if let payload = inflated[key] {
                                output = .message(opcode, payload)
                            } else if let payload = try? inflater.inflate(compressed, limit: 64 << 20) {
                                if inflated.count >= 4096 { inflated.removeAll(keepingCapacity: true) }
                                inflated[key] = payload
                                reader.inflations.add(1, ordering: .relaxed)
                                output = .message(opcode, payload)
                            } else {
                                output = .fail(.invalidPayload, "does not inflate")
                            }
                        }
                        switch output {
                        case .message(_, let payload):
                            reader.messages.add(1, ordering: .relaxed)
                            if Blocking.find(Self.created, in: payload) != nil,
                                let start = Blocking.find(Self.streamID, in: payload)
                            {
                                let from = start + Self.streamID.count
                                receipts.append(
                                    Receipt(id: Array(payload[from..<min(from + 36, payload.count)]), at: at))
                                reader.deliveries.add(1, ordering: .relaxed)
                            } else if Blocking.find(Self.subscribedOp, in: payload) != nil {
                                reader.subscribed.add(1, ordering: .relaxed)
                            } else if self.options.mode == .presence {
                                if Blocking.find(Self.presentOp, in: payload) != nil {
                                    reader.presents.add(1, ordering: .relaxed)
                                } else if Blocking.find(Self.errorOp, in: payload) != nil {
                                    reader.errors.add(1, ordering: .relaxed)
                                }
                                answered += 1
                            }
                        case .ping(let payload):
                            pongs.append(FrameEncoder.frame(.pong, payload, maskKey: [1, 2, 3, 4]))
                        default:
                            break
                        }
                    }
                }
                for pong in pongs { _ = Blocking.writeAll(fd, pong) }
                // One op in flight per connection: the next goes once the last is answered.
                if answered > 0, !stop.load(ordering: .relaxed) {
                    let count = (sent[fd] ?? 0) + 1
                    sent[fd] = count
                    _ = Blocking.writeAll(fd, presenceFrame(fd: fd, count: count))
                }
            }
        }
    }
}

/// A compressed message as a dictionary key, hashed in one pass over its bytes (an
/// array of bytes hashes byte by byte, which cost the load generator more than the
/// inflation it saves).
private struct CompressedMessage: Hashable {
    let bytes: [UInt8]

    func hash(into hasher: inout Hasher) {
        bytes.withUnsafeBytes { hasher.combine(bytes: $0) }
    }
}
