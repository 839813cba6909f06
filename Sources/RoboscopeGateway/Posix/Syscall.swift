import CLinuxSystem
#if canImport(Glibc)
import Glibc
#endif

/// A system call failed with `errno` (other than EINTR, which is retried, and
/// EAGAIN, which is "would block").
public struct SystemError: Error, CustomStringConvertible {
    public var call: String
    public var errno: Int32

    public var description: String { "\(call): \(String(cString: strerror(errno))) (errno \(errno))" }
}

/// What a non-blocking call did.
enum IOResult<Value> {
    case done(Value)
    case wouldBlock
}

/// The one way into the operating system: retries EINTR, reports EAGAIN as
/// `.wouldBlock`, throws `SystemError` for anything else.
@inline(__always)
func syscall<Value: FixedWidthInteger>(_ call: @autoclosure () -> String, _ body: () -> Value) throws -> IOResult<Value>
{
    while true {
        let result = body()
        if result >= 0 { return .done(result) }
        let code = errno
        if code == EINTR { continue }
        if code == EAGAIN || code == EWOULDBLOCK { return .wouldBlock }
        throw SystemError(call: call(), errno: code)
    }
}

/// For calls that never block: the result, or a thrown `SystemError`.
@inline(__always)
@discardableResult
func syscallChecked<Value: FixedWidthInteger>(_ call: @autoclosure () -> String, _ body: () -> Value) throws -> Value {
    switch try syscall(call(), body) {
    case .done(let value): return value
    case .wouldBlock: throw SystemError(call: call(), errno: EAGAIN)
    }
}
