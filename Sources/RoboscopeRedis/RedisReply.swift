import CHiredis

/// A Redis reply copied out of hiredis's `redisReply`, which is freed exactly once,
/// right after the copy, in `RedisConnection.command`.
public enum RedisReply: Hashable, Sendable {
    case status(String)
    case error(String)
    case integer(Int64)
    case string(String)
    case null
    case array([RedisReply])

    init(_ reply: UnsafePointer<redisReply>) {
        let value = reply.pointee
        switch value.type {
        case REDIS_REPLY_STATUS: self = .status(Self.text(value))
        case REDIS_REPLY_ERROR: self = .error(Self.text(value))
        case REDIS_REPLY_INTEGER: self = .integer(value.integer)
        case REDIS_REPLY_STRING: self = .string(Self.text(value))
        case REDIS_REPLY_ARRAY:
            var items: [RedisReply] = []
            for index in 0..<Int(value.elements) {
                if let element = value.element[index] { items.append(RedisReply(element)) }
            }
            self = .array(items)
        default: self = .null
        }
    }

    static func text(_ reply: redisReply) -> String {
        guard let pointer = reply.str else { return "" }
        let bytes = UnsafeRawBufferPointer(start: pointer, count: Int(reply.len))
        return String(decoding: bytes, as: UTF8.self)
    }

    public var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    public var string: String? {
        if case .string(let value) = self { return value }
        return nil
    }

    public var array: [RedisReply]? {
        if case .array(let value) = self { return value }
        return nil
    }
}
