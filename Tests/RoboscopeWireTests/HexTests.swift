import RoboscopeWire
import Testing

/// Lower-case hex as digests travel: encoded lower case, decoded in either case, from a
/// string or from bytes in place (a database cell); anything that is not pairs of hex
/// digits decodes to nothing.
@Suite struct HexTests {
    @Test func bytesGoThereAndBack() {
        let bytes: [UInt8] = [0x00, 0x01, 0x7f, 0x80, 0xab, 0xff]
        #expect(Hex.encode(bytes) == "00017f80abff")
        #expect(Hex.decode("00017f80abff") == bytes)
        #expect(Hex.decode("00017F80ABFF") == bytes)
        #expect(Hex.decode("") == [])
    }

    @Test func digitsInPlaceDecodeAsTheirString() {
        let cell = Array(#"\x00ff10"#.utf8)
        #expect(Hex.decode(digits: cell.dropFirst(2)) == [0x00, 0xff, 0x10])
        cell.withUnsafeBytes { #expect(Hex.decode(digits: $0.dropFirst(2)) == [0x00, 0xff, 0x10]) }
    }

    @Test func whatIsNotPairsOfHexDigitsDecodesToNothing() {
        for text in ["0", "abc", "0g", "zz", " 00", "00\n"] {
            #expect(Hex.decode(text) == nil, "\(text)")
        }
    }
}
