/// Turns the bytes of a WebSocket connection into messages and control frames: the
/// frame decoder and message assembler of RFC 6455, with no I/O.
///
/// Bytes may arrive in any split: the reader keeps a partial header (at most 14
/// bytes) and streams payload straight into the message, unmasking and checking
/// UTF-8 as it goes, so bad text fails at the first impossible byte and a frame that
/// would pass the size limit fails on its header, before its payload is read.
/// After a close frame or a failure the reader ignores the rest of the input.
///
/// With permessage-deflate agreed, a data message whose first frame has RSV1 set is
/// inflated when it completes, bounded by `maxMessageSize` after inflation (a bomb fails
/// with 1009 before it is allocated), and its text checked as UTF-8 then.
public struct MessageReader {
    public enum Role: Sendable {
        /// Reads client frames: each must be masked.
        case server
        /// Reads server frames: none may be masked.
        case client
    }

    public enum Output: Equatable, Sendable {
        /// A complete text or binary message (fragments joined).
        case message(Opcode, [UInt8])
        case ping([UInt8])
        case pong([UInt8])
        /// The peer's close frame: its code (nil when it sent none) and reason.
        case close(CloseCode?, String)
        /// The peer broke the protocol: close with this code and reason, then stop.
        case fail(CloseCode, String)
        /// A compressed message as it arrived (RSV1), fragments joined: only from a reader
        /// whose `Compression` leaves inflation to its caller, which must bound what it
        /// inflates and check text as UTF-8 itself.
        case compressed(Opcode, [UInt8])
    }

    public let role: Role
    /// The largest message (all fragments together) accepted, in bytes.
    public let maxMessageSize: Int
    /// How compressed messages are read: nil when permessage-deflate was not agreed.
    public let compression: Compression?
    /// True once a close frame was read or the input failed; later bytes are ignored.
    public private(set) var isFinished = false

    private var header: [UInt8] = []
    /// The frame whose payload is being read, if its header is complete.
    private var frame: FrameHeader?
    private var payloadRemaining = 0
    private var maskKey: [UInt8] = [0, 0, 0, 0]
    private var maskOffset = 0
    /// The data message in progress (across fragments) and its first frame's opcode.
    private var message: [UInt8] = []
    private var messageOpcode: Opcode?
    /// Whether the message in progress came with RSV1 (compressed).
    private var messageCompressed = false
    /// Made for the first compressed message; kept only when the peer keeps its context.
    private var inflater: InflaterBox?
    private var utf8 = UTF8Validator()
    private var control: [UInt8] = []

    /// How the peer compresses, as the upgrade agreed.
    public struct Compression: Sendable, Equatable {
        /// The peer's window carries from message to message: the inflater lives as long
        /// as the connection. Without, each compressed message gets one for its own time.
        public var peerKeepsContext: Bool
        /// Compressed messages are handed over as they are (`Output.compressed`): for a
        /// caller that inflates elsewhere, such as a load generator that holds many
        /// connections receiving the same broadcast byte for byte and inflates one copy.
        public var leavesInflationToCaller: Bool

        public init(peerKeepsContext: Bool, leavesInflationToCaller: Bool = false) {
            self.peerKeepsContext = peerKeepsContext
            self.leavesInflationToCaller = leavesInflationToCaller
        }
    }

    public init(role: Role, maxMessageSize: Int, compression: Compression? = nil) {
        self.role = role
        self.maxMessageSize = maxMessageSize
        self.compression = compression
    }

    /// Whether a fragmented message is partly read (for a close that interrupts it).
    public var isInsideMessage: Bool { messageOpcode != nil }

    /// Consumes `input`, calling `emit` for each complete message or control frame.
    public mutating func feed(_ input: UnsafeRawBufferPointer, _ emit: (Output) -> Void) {
        var index = 0
        while index < input.count, !isFinished {
            if frame == nil {
                index += readHeader(input, from: index, emit)
            } else {
                let count = min(payloadRemaining, input.count - index)
                readPayload(UnsafeRawBufferPointer(rebasing: input[index..<(index + count)]), emit)
                index += count
            }
            if let current = frame, payloadRemaining == 0, !isFinished {
                finish(current, emit)
            }
        }
    }

    public mutating func feed(_ input: [UInt8], _ emit: (Output) -> Void) {
        input.withUnsafeBytes { feed($0, emit) }
    }

    // MARK: Header

    /// Takes header bytes from `input`; returns how many it used.
    private mutating func readHeader(_ input: UnsafeRawBufferPointer, from start: Int, _ emit: (Output) -> Void) -> Int
    {
        var index = start
        while header.count < 2, index < input.count {
            header.append(input[index]); index += 1
        }
        guard header.count >= 2 else { return index - start }
        if header.count == 2, let problem = checkFirstBytes() {
            fail(problem.0, problem.1, emit)
            return index - start
        }
        let lengthField = header[1] & 0x7F
        let extended = lengthField == 126 ? 2 : (lengthField == 127 ? 8 : 0)
        let needed = 2 + extended + (header[1] & 0x80 != 0 ? 4 : 0)
        while header.count < needed, index < input.count {
            header.append(input[index]); index += 1
        }
        guard header.count == needed else { return index - start }

        var length = UInt64(lengthField)
        if extended > 0 {
            length = 0
            for byte in header[2..<(2 + extended)] { length = length << 8 | UInt64(byte) }
            if length >> 63 != 0 {
                fail(.protocolError, "frame length has its most significant bit set", emit)
                return index - start
            }
        }
        let compressedFrame = header[0] & 0x40 != 0
        let parsed = FrameHeader(
            fin: header[0] & 0x80 != 0, opcode: Opcode(rawValue: header[0] & 0x0F)!, length: length
        )
        if !parsed.opcode.isControl {
            let soFar = parsed.opcode == .continuation ? message.count : 0
            if length > UInt64(maxMessageSize - soFar) {
                fail(.messageTooBig, "message over \(maxMessageSize) bytes", emit)
                return index - start
            }
        }
        if header[1] & 0x80 != 0 {
            maskKey = Array(header[(needed - 4)..<needed])
        }
        maskOffset = 0
        header.removeAll(keepingCapacity: true)
        frame = parsed
        payloadRemaining = Int(length)
        if !parsed.opcode.isControl, parsed.opcode != .continuation {
            messageOpcode = parsed.opcode
            messageCompressed = compressedFrame
            utf8 = UTF8Validator()
        }
        return index - start
    }

    /// The checks that the first two bytes decide, made before the rest arrives.
    private func checkFirstBytes() -> (CloseCode, String)? {
        let first = header[0]
        let second = header[1]
        guard let opcode = Opcode(rawValue: first & 0x0F) else {
            return (.protocolError, "reserved opcode \(first & 0x0F)")
        }
        if first & 0x30 != 0 { return (.protocolError, "reserved bits set without an extension") }
        if first & 0x40 != 0 {
            // RSV1 marks a compressed message, on its first frame only (RFC 7692 section 6).
            if compression == nil { return (.protocolError, "reserved bits set without an extension") }
            if opcode.isControl || opcode == .continuation {
                return (.protocolError, "RSV1 set on a \(opcode.isControl ? "control" : "continuation") frame")
            }
        }
        let masked = second & 0x80 != 0
        switch role {
        case .server where !masked: return (.protocolError, "client frames must be masked")
        case .client where masked: return (.protocolError, "server frames must not be masked")
        default: break
        }
        if opcode.isControl {
            if first & 0x80 == 0 { return (.protocolError, "fragmented control frame") }
            if second & 0x7F > 125 { return (.protocolError, "control frame over 125 bytes") }
        } else if opcode == .continuation {
            if messageOpcode == nil { return (.protocolError, "continuation frame without a message") }
        } else if messageOpcode != nil {
            return (.protocolError, "new message before the fragmented one ended")
        }
        return nil
    }

    // MARK: Payload

    private mutating func readPayload(_ chunk: UnsafeRawBufferPointer, _ emit: (Output) -> Void) {
        payloadRemaining -= chunk.count
        guard let current = frame else { return }
        if current.opcode.isControl {
            appendUnmasked(chunk, toControl: true)
            return
        }
        let start = message.count
        appendUnmasked(chunk, toControl: false)
        if messageOpcode == .text, !messageCompressed {
            let valid = message.withUnsafeBytes { utf8.feed(UnsafeRawBufferPointer(rebasing: $0[start...])) }
            if !valid { fail(.invalidPayload, "text is not valid UTF-8", emit) }
        }
    }

    private mutating func appendUnmasked(_ chunk: UnsafeRawBufferPointer, toControl: Bool) {
        // Moved out and back so that masking does not overlap an access to self.
        var buffer = toControl ? control : message
        if toControl { control = [] } else { message = [] }
        let start = buffer.count
        buffer.append(contentsOf: chunk)
        if role == .server {
            maskOffset = Masking.apply(maskKey, offset: maskOffset, to: &buffer, from: start)
        }
        if toControl { control = buffer } else { message = buffer }
    }

    // MARK: Frame end

    private mutating func finish(_ current: FrameHeader, _ emit: (Output) -> Void) {
        frame = nil
        switch current.opcode {
        case .close:
            finishClose(emit)
        case .ping:
            emit(.ping(control)); control.removeAll(keepingCapacity: true)
        case .pong:
            emit(.pong(control)); control.removeAll(keepingCapacity: true)
        case .text, .binary, .continuation:
            guard current.fin, let opcode = messageOpcode else { return }
            var complete = message
            message = []
            if messageCompressed, compression?.leavesInflationToCaller == true {
                messageOpcode = nil
                messageCompressed = false
                return emit(.compressed(opcode, complete))
            }
            if messageCompressed {
                switch inflate(complete) {
                case .success(let inflated): complete = inflated
                case .failure(let failure): return fail(failure.code, failure.reason, emit)
                }
                if opcode == .text, !(utf8.feed(complete) && utf8.isComplete) {
                    return fail(.invalidPayload, "text is not valid UTF-8", emit)
                }
            } else if opcode == .text, !utf8.isComplete {
                return fail(.invalidPayload, "text ends inside a UTF-8 sequence", emit)
            }
            messageOpcode = nil
            messageCompressed = false
            emit(.message(opcode, complete))
        }
    }

    private mutating func inflate(_ compressed: [UInt8]) -> Result<[UInt8], InflateRefusal> {
        let keepsContext = compression?.peerKeepsContext ?? false
        let box = inflater ?? InflaterBox(MessageInflater(keepsContext: keepsContext))
        // Without context the inflater's memory (about 40 KiB) is given back after each
        // message: an idle connection holds none.
        inflater = keepsContext ? box : nil
        do {
            return .success(try box.inflater.inflate(compressed, limit: maxMessageSize))
        } catch {
            switch error {
            case .tooBig:
                return .failure(InflateRefusal(.messageTooBig, "message over \(maxMessageSize) bytes once inflated"))
            case .corrupt(let reason):
                return .failure(InflateRefusal(.invalidPayload, "the compressed message does not inflate: \(reason)"))
            }
        }
    }

    private mutating func finishClose(_ emit: (Output) -> Void) {
        defer { isFinished = true }
        guard !control.isEmpty else { return emit(.close(nil, "")) }
        guard control.count >= 2 else { return fail(.protocolError, "close payload of one byte", emit) }
        let code = CloseCode(UInt16(control[0]) << 8 | UInt16(control[1]))
        guard code.isValidOnWire else { return fail(.protocolError, "close code \(code) is not allowed", emit) }
        let reason = Array(control[2...])
        var validator = UTF8Validator()
        guard validator.feed(reason), validator.isComplete else {
            return fail(.invalidPayload, "close reason is not valid UTF-8", emit)
        }
        emit(.close(code, String(decoding: reason, as: UTF8.self)))
    }

    private mutating func fail(_ code: CloseCode, _ reason: String, _ emit: (Output) -> Void) {
        isFinished = true
        emit(.fail(code, reason))
    }
}

/// Why an inflation failed: the close code and reason.
struct InflateRefusal: Error {
    var code: CloseCode
    var reason: String
    init(_ code: CloseCode, _ reason: String) {
        self.code = code
        self.reason = reason
    }
}

/// The reader's inflater (zlib's stream state): a reference, so a copied reader shares it.
/// Not `Sendable`, nor the reader: a connection's reader stays on the thread that reads it.
final class InflaterBox {
    let inflater: MessageInflater
    init(_ inflater: MessageInflater) { self.inflater = inflater }
}

/// The fields of a frame header the reader keeps while reading the payload.
struct FrameHeader: Sendable {
    var fin: Bool
    var opcode: Opcode
    var length: UInt64
}
