import Testing
import WebSocketCodec

@Suite struct UTF8ValidatorTests {
    @Test(
        arguments: [
            ([0x41, 0xC3, 0xA9], true),
            ([0xF0, 0x9F, 0x98, 0x80], true),
            ([0xF4, 0x8F, 0xBF, 0xBF], true),
            ([0xC0, 0x80], false),
            ([0xE0, 0x80, 0x80], false),
            ([0xED, 0xA0, 0x80], false),
            ([0xF4, 0x90, 0x80, 0x80], false),
            ([0xF5], false),
            ([0x80], false),
        ] as [([UInt8], Bool)])
    func judgesSequences(bytes: [UInt8], valid: Bool) {
        var validator = UTF8Validator()
        #expect((validator.feed(bytes) && validator.isComplete) == valid)
    }

    /// The validator skips runs of ASCII a word at a time: a byte that is not ASCII must
    /// be seen wherever it falls in or after such a run, and a sequence split between
    /// two feeds must be judged as if it came whole.
    @Test func seesEveryByteAfterARunOfASCII() {
        let ascii = Array(repeating: UInt8(ascii: "a"), count: 40)
        for offset in 0...ascii.count {
            for (inserted, valid) in [([0xFF], false), ([0x80], false), ([0xC3, 0xA9], true), ([0xC3], false)]
                as [([UInt8], Bool)]
            {
                let bytes = Array(ascii[..<offset]) + inserted + Array(ascii[offset...])
                #expect(validate(bytes) == valid, "\(inserted) at \(offset)")
                for split in 0...bytes.count {
                    #expect(validate(bytes, splitAt: [split]) == valid, "\(inserted) at \(offset), split at \(split)")
                }
            }
        }
    }

    /// Random mixtures of ASCII runs, valid characters of every length and stray bytes,
    /// fed whole and in random pieces, judged as the standard library judges them.
    @Test func agreesWithTheStandardLibrary() {
        var random = SplitMix64(seed: 0x5EED)
        let characters: [[UInt8]] = [
            "é", "€", "😀", "\u{10FFFF}", "\u{7F}", "\u{80}", "\u{7FF}", "\u{800}", "\u{FFFF}", "\u{10000}",
        ]
        .map { Array($0.utf8) }
        let strays: [UInt8] = [0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF]
        for _ in 0..<3_000 {
            var bytes: [UInt8] = []
            for _ in 0..<Int(random.next() % 6) {
                switch random.next() % 3 {
                case 0: bytes += (0..<Int(random.next() % 20)).map { _ in UInt8(random.next() % 0x80) }
                case 1: bytes += characters[Int(random.next() % UInt64(characters.count))]
                default: bytes.append(strays[Int(random.next() % UInt64(strays.count))])
                }
            }
            let expected = String(validating: bytes, as: UTF8.self) != nil
            let splits = (0..<Int(random.next() % 4)).map { _ in Int(random.next() % UInt64(bytes.count + 1)) }
            #expect(validate(bytes) == expected, "\(bytes)")
            #expect(validate(bytes, splitAt: splits) == expected, "\(bytes) split at \(splits)")
        }
    }

    private func validate(_ bytes: [UInt8], splitAt splits: [Int] = []) -> Bool {
        var validator = UTF8Validator()
        var start = 0
        for end in splits.sorted() + [bytes.count] {
            guard validator.feed(Array(bytes[start..<end])) else { return false }
            start = end
        }
        return validator.isComplete
    }
}

/// A small deterministic generator, so that a failure can be reproduced.
struct SplitMix64 {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
