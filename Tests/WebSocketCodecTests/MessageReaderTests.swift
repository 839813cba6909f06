import Testing
import WebSocketCodec

/// Reads `bytes` as a server would (or as `role`), all at once or one byte at a time,
/// with permessage-deflate when `compression` says how the peer compresses.
func read(
    _ bytes: [UInt8], max: Int = 1 << 20, byteByByte: Bool = false, role: MessageReader.Role = .server,
    compression: MessageReader.Compression? = nil
) -> [MessageReader.Output] {
    var reader = MessageReader(role: role, maxMessageSize: max, compression: compression)
    var outputs: [MessageReader.Output] = []
    if byteByByte {
        for byte in bytes { reader.feed([byte]) { outputs.append($0) } }
    } else {
        reader.feed(bytes) { outputs.append($0) }
    }
    return outputs
}

let key: [UInt8] = [0x37, 0xFA, 0x21, 0x3D]

func masked(_ opcode: Opcode, _ payload: [UInt8], fin: Bool = true) -> [UInt8] {
    FrameEncoder.frame(opcode, payload, fin: fin, maskKey: key)
}

@Suite struct MessageReaderTests {
    @Test func readsTheRFCMaskedHello() {
        let bytes: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        #expect(read(bytes) == [.message(.text, Array("Hello".utf8))])
        #expect(read(bytes, byteByByte: true) == [.message(.text, Array("Hello".utf8))])
    }

    @Test(arguments: [0, 125, 126, 65535, 65536, 200_000])
    func readsEveryLengthEncoding(length: Int) {
        let payload = (0..<length).map { UInt8(truncatingIfNeeded: $0 * 7) }
        let bytes = masked(.binary, payload)
        #expect(read(bytes) == [.message(.binary, payload)])
        if length < 70_000 { #expect(read(bytes, byteByByte: true) == [.message(.binary, payload)]) }
    }

    @Test func joinsFragmentsAroundAPing() {
        let bytes =
            masked(.text, Array("Hel".utf8), fin: false) + masked(.ping, [1, 2])
            + masked(.continuation, Array("lo".utf8))
        #expect(read(bytes) == [.ping([1, 2]), .message(.text, Array("Hello".utf8))])
    }

    @Test func acceptsACharacterSplitAcrossFragments() {
        let euro: [UInt8] = [0xE2, 0x82, 0xAC]
        let bytes = masked(.text, [euro[0]], fin: false) + masked(.continuation, Array(euro[1...]))
        #expect(read(bytes) == [.message(.text, euro)])
    }

    @Test func failsBadUTF8AtTheFragmentNotAtTheEnd() {
        // The second fragment makes the text invalid; the final one never arrives.
        let bytes = masked(.text, Array("ok".utf8), fin: false) + masked(.continuation, [0xCE, 0xBA, 0xF4, 0x90])
        #expect(read(bytes) == [.fail(.invalidPayload, "text is not valid UTF-8")])
    }

    @Test func failsTextThatEndsInsideACharacter() {
        #expect(
            read(masked(.text, [0x61, 0xE2, 0x82])) == [.fail(.invalidPayload, "text ends inside a UTF-8 sequence")])
    }

    @Test(
        arguments: [
            ([0x81, 0x05] + Array("Hello".utf8), "client frames must be masked"),
            ([0xC1, 0x80] + key, "reserved bits set without an extension"),
            ([0x83, 0x80] + key, "reserved opcode 3"),
            ([0x0B, 0x80] + key, "reserved opcode 11"),
            ([0x89, 0xFE, 0x00, 0x7E] + key, "control frame over 125 bytes"),
            ([0x09, 0x80] + key, "fragmented control frame"),
            ([0x80, 0x80] + key, "continuation frame without a message"),
        ] as [([UInt8], String)])
    func failsProtocolErrorsWith1002(bytes: [UInt8], reason: String) {
        #expect(read(bytes) == [.fail(.protocolError, reason)])
    }

    @Test func failsANewMessageInsideAFragmentedOne() {
        let bytes = masked(.text, Array("a".utf8), fin: false) + masked(.text, Array("b".utf8))
        #expect(read(bytes) == [.fail(.protocolError, "new message before the fragmented one ended")])
    }

    @Test func failsAnOversizedMessageOnItsHeader() {
        // Only the header of the second fragment arrives: the limit is known from it.
        let first = masked(.binary, Array(repeating: 1, count: 60), fin: false)
        let second = Array(masked(.continuation, Array(repeating: 2, count: 60)).prefix(6))
        #expect(read(first + second, max: 100) == [.fail(.messageTooBig, "message over 100 bytes")])
    }

    @Test func readsCloseFrames() {
        #expect(read(masked(.close, [])) == [.close(nil, "")])
        #expect(read(FrameEncoder.close(.normal, reason: "bye", maskKey: key)) == [.close(.normal, "bye")])
        #expect(read(masked(.close, [0x03])) == [.fail(.protocolError, "close payload of one byte")])
        #expect(read(masked(.close, [0x03, 0xED])) == [.fail(.protocolError, "close code 1005 is not allowed")])
        #expect(
            read(masked(.close, [0x03, 0xE8, 0xFF])) == [.fail(.invalidPayload, "close reason is not valid UTF-8")])
    }

    @Test func ignoresEverythingAfterClose() {
        let bytes = masked(.close, [0x03, 0xE8]) + masked(.text, Array("late".utf8))
        #expect(read(bytes) == [.close(.normal, "")])
    }

    @Test func closeInsideAFragmentedMessageIsStillAClose() {
        let bytes =
            masked(.text, Array("frag".utf8), fin: false) + masked(.close, [0x03, 0xE8]) + masked(.continuation, [0x21])
        #expect(read(bytes) == [.close(.normal, "")])
    }

    @Test func clientRoleReadsUnmaskedAndRefusesMasked() {
        #expect(read(FrameEncoder.frame(.text, Array("hi".utf8)), role: .client) == [.message(.text, Array("hi".utf8))])
        #expect(
            read(masked(.text, Array("hi".utf8)), role: .client) == [
                .fail(.protocolError, "server frames must not be masked")
            ])
    }

    @Test func closeReasonIsCutOnACharacterBoundary() {
        let frame = FrameEncoder.close(.goingAway, reason: String(repeating: "€", count: 60))
        #expect(frame.count <= 127)
        guard case .close(let code, let reason) = read(frame, role: .client).first else {
            Issue.record("no close"); return
        }
        #expect(code == .goingAway)
        #expect(reason == String(repeating: "€", count: 41))
    }
}
