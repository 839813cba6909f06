// A clock the tests drive by hand, shared by the unit tests of the layers whose state
// machines take an injected instant (BlockingPool's, the gateway's).

/// A point on a clock the test moves by hand: `.zero + .seconds(3)`.
public struct TestInstant: InstantProtocol, CustomStringConvertible {
    public var offset: Duration

    public init(offset: Duration) { self.offset = offset }

    public static let zero = TestInstant(offset: .zero)

    public func advanced(by duration: Duration) -> TestInstant { TestInstant(offset: offset + duration) }
    public func duration(to other: TestInstant) -> Duration { other.offset - offset }
    public static func < (lhs: TestInstant, rhs: TestInstant) -> Bool { lhs.offset < rhs.offset }
    public var description: String { "t+\(offset)" }
}

extension TestInstant {
    public static func + (lhs: TestInstant, rhs: Duration) -> TestInstant { lhs.advanced(by: rhs) }
}

/// Holds a state machine under test by reference: `#expect` captures what it
/// evaluates as constants, so mutating calls inside it go through `mutate`.
public final class Box<Value> {
    public var value: Value
    public init(_ value: Value) { self.value = value }

    /// `#expect(machine.mutate { $0.tick(now: t) } == .ping)`
    public func mutate<Result>(_ body: (inout Value) -> Result) -> Result { body(&value) }
}
