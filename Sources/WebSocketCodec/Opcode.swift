/// A frame's opcode (RFC 6455 section 5.2). Values 3-7 and 11-15 are reserved.
public enum Opcode: UInt8, Sendable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Close, ping and pong: at most 125 bytes and never fragmented.
    public var isControl: Bool { rawValue & 0x8 != 0 }
}
