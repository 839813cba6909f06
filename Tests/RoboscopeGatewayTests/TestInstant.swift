/// A point on a clock the test moves by hand: `.zero + .seconds(3)`.
struct TestInstant: InstantProtocol, CustomStringConvertible {
    var offset: Duration

    static let zero = TestInstant(offset: .zero)

    func advanced(by duration: Duration) -> TestInstant { TestInstant(offset: offset + duration) }
    func duration(to other: TestInstant) -> Duration { other.offset - offset }
    static func < (lhs: TestInstant, rhs: TestInstant) -> Bool { lhs.offset < rhs.offset }
    var description: String { "t+\(offset)" }
}

extension TestInstant {
    static func + (lhs: TestInstant, rhs: Duration) -> TestInstant { lhs.advanced(by: rhs) }
}

/// Holds a state machine under test by reference: `#expect` captures what it
/// evaluates as constants, so mutating calls inside it go through `mutate`.
final class Box<Value> {
    var value: Value
    init(_ value: Value) { self.value = value }

    /// `#expect(machine.mutate { $0.tick(now: t) } == .ping)`
    func mutate<Result>(_ body: (inout Value) -> Result) -> Result { body(&value) }
}
