import Testing
import WebSocketCodec

/// Reads server frames (unmasked) as a client that agreed permessage-deflate would.
private func readCompressed(
    _ bytes: [UInt8], max: Int = 1 << 20, keepsContext: Bool = false, byteByByte: Bool = false,
    role: MessageReader.Role = .client
) -> [MessageReader.Output] {
    read(bytes, max: max, byteByByte: byteByByte, role: role, compression: .init(peerKeepsContext: keepsContext))
}

private let hello = Array("Hello".utf8)

@Suite struct PerMessageDeflateCodecTests {
    // MARK: RFC 7692 section 7.2.3, byte for byte

    @Test func compressesHelloAsTheRFCDoes() {
        let deflater = MessageDeflater(windowBits: 15, keepsContext: false)
        #expect(deflater.compress(hello) == [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00])
        #expect(
            deflater.compress(hello) == [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00],
            "without context, the same bytes again")
        let frame = FrameEncoder.frame(.text, deflater.compress(hello), compressed: true)
        #expect(frame == [0xC1, 0x07, 0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00])
        #expect(readCompressed(frame) == [.message(.text, hello)])
        #expect(readCompressed(frame, byteByByte: true) == [.message(.text, hello)])
    }

    @Test func aSecondHelloWithContextRefersToTheFirst() {
        let deflater = MessageDeflater(windowBits: 15, keepsContext: true)
        let first = deflater.compress(hello)
        let second = deflater.compress(hello)
        #expect(second == [0xF2, 0x00, 0x11, 0x00, 0x00])
        let frames =
            FrameEncoder.frame(.text, first, compressed: true) + FrameEncoder.frame(.text, second, compressed: true)
        #expect(readCompressed(frames, keepsContext: true) == [.message(.text, hello), .message(.text, hello)])
        // A reader that forgets its window between messages cannot read the second.
        #expect(
            readCompressed(frames, keepsContext: false).last.map {
                if case .fail(.invalidPayload, _) = $0 { true } else { false }
            } == true)
    }

    @Test func readsAStoredBlockAndAFragmentedMessage() {
        let stored: [UInt8] = [0xC1, 0x0B, 0x00, 0x05, 0x00, 0xFA, 0xFF, 0x48, 0x65, 0x6C, 0x6C, 0x6F, 0x00]
        #expect(readCompressed(stored) == [.message(.text, hello)])
        let fragmented: [UInt8] = [0x41, 0x03, 0xF2, 0x48, 0xCD, 0x80, 0x04, 0xC9, 0xC9, 0x07, 0x00]
        #expect(readCompressed(fragmented) == [.message(.text, hello)])
        #expect(readCompressed(fragmented, byteByByte: true) == [.message(.text, hello)])
    }

    @Test func aReaderThatLeavesInflationToItsCallerHandsOverTheCompressedBytes() throws {
        let fragmented: [UInt8] = [0x41, 0x03, 0xF2, 0x48, 0xCD, 0x80, 0x04, 0xC9, 0xC9, 0x07, 0x00]
        let plain = FrameEncoder.frame(.text, hello)
        let caller = MessageReader.Compression(peerKeepsContext: false, leavesInflationToCaller: true)
        for byteByByte in [false, true] {
            #expect(
                read(fragmented + plain, max: 1 << 20, byteByByte: byteByByte, role: .client, compression: caller)
                    == [.compressed(.text, [0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00]), .message(.text, hello)])
        }
        #expect(
            try MessageInflater(keepsContext: false).inflate([0xF2, 0x48, 0xCD, 0xC9, 0xC9, 0x07, 0x00], limit: 5)
                == hello)
    }

    @Test func anEmptyMessageIsOneByteWithAndWithoutContext() {
        for keepsContext in [false, true] {
            let deflater = MessageDeflater(windowBits: 15, keepsContext: keepsContext)
            let frames = [hello, [], [], hello].map {
                FrameEncoder.frame(.text, deflater.compress($0), compressed: true)
            }
            #expect(frames[1] == [0xC1, 0x01, 0x00] && frames[2] == [0xC1, 0x01, 0x00])
            #expect(
                readCompressed(frames.flatMap { $0 }, keepsContext: keepsContext)
                    == [.message(.text, hello), .message(.text, []), .message(.text, []), .message(.text, hello)])
        }
    }

    @Test func uncompressedMessagesPassAsTheyAre() {
        #expect(readCompressed(FrameEncoder.frame(.binary, [1, 2, 3])) == [.message(.binary, [1, 2, 3])])
    }

    // MARK: Refusals

    @Test(
        arguments: [
            ([0xC1, 0x05] + Array("Hello".utf8), nil as Bool?, "reserved bits set without an extension"),
            (
                [0x41, 0x03, 0xF2, 0x48, 0xCD, 0xC0, 0x04, 0xC9, 0xC9, 0x07, 0x00], false,
                "RSV1 set on a continuation frame"
            ),
            ([0xC9, 0x00], false, "RSV1 set on a control frame"),
            ([0xA1, 0x00], false, "reserved bits set without an extension"),
        ] as [([UInt8], Bool?, String)])
    func rsv1IsAllowedOnlyOnAMessagesFirstFrameWhenAgreed(bytes: [UInt8], agreed: Bool?, reason: String) {
        var reader = MessageReader(
            role: .client, maxMessageSize: 1 << 20, compression: agreed.map { .init(peerKeepsContext: $0) })
        var outputs: [MessageReader.Output] = []
        reader.feed(bytes) { outputs.append($0) }
        #expect(outputs == [.fail(.protocolError, reason)])
    }

    @Test func aBombFailsWith1009AtTheLimitAfterInflation() {
        let zeros = [UInt8](repeating: 0, count: 8 << 20)
        let compressed = MessageDeflater(windowBits: 15, keepsContext: false).compress(zeros)
        #expect(compressed.count < 16 << 10, "8 MiB of zeros is a few KiB on the wire")
        let frame = FrameEncoder.frame(.binary, compressed, maskKey: [1, 2, 3, 4], compressed: true)
        #expect(
            readCompressed(frame, max: 1 << 20, role: .server) == [
                .fail(.messageTooBig, "message over 1048576 bytes once inflated")
            ])
        #expect(
            readCompressed(frame, max: 8 << 20, role: .server) == [.message(.binary, zeros)],
            "exactly at the limit is allowed")
    }

    @Test func aCorruptStreamAndCompressedBadTextFailWith1007() {
        let corrupt = readCompressed(FrameEncoder.frame(.text, [0xFF, 0xFF, 0xFF, 0xFF], compressed: true))
        #expect(
            corrupt.count == 1
                && {
                    if case .fail(.invalidPayload, let reason) = corrupt[0] {
                        reason.hasPrefix("the compressed message does not inflate")
                    } else {
                        false
                    }
                }())
        let badText = MessageDeflater(windowBits: 15, keepsContext: false).compress([0x48, 0xC3, 0x28])
        #expect(
            readCompressed(FrameEncoder.frame(.text, badText, compressed: true)) == [
                .fail(.invalidPayload, "text is not valid UTF-8")
            ])
    }

    // MARK: Round trips

    @Test(arguments: [9, 10, 12, 15])
    func everyWindowRoundTripsWithAndWithoutContext(windowBits: Int) {
        var random = SplitMix64(seed: UInt64(windowBits))
        for keepsContext in [false, true] {
            let deflater = MessageDeflater(windowBits: windowBits, keepsContext: keepsContext)
            var reader = MessageReader(
                role: .client, maxMessageSize: 1 << 20, compression: .init(peerKeepsContext: keepsContext))
            for _ in 0..<40 {
                // JSON-like text: repeats near and far, as marker events do.
                let words = [
                    "{\"type\":\"marker.updated\"", "\"details\":{", "\"x\":", "0.25", "\"work_session_id\":\"", "}",
                    ",",
                ]
                let text = (0..<Int(random.next() % 400)).map { _ in words[Int(random.next() % UInt64(words.count))] }
                    .joined()
                let bytes = Array(text.utf8)
                var outputs: [MessageReader.Output] = []
                reader.feed(FrameEncoder.frame(.text, deflater.compress(bytes), compressed: true)) {
                    outputs.append($0)
                }
                #expect(outputs == [.message(.text, bytes)], "window \(windowBits), context \(keepsContext)")
            }
        }
    }

    // MARK: Negotiation (RFC 7692 section 7.1)

    @Test(
        arguments: [
            ("permessage-deflate", "permessage-deflate; client_no_context_takeover", true, 15),
            ("permessage-deflate; client_max_window_bits", "permessage-deflate; client_no_context_takeover", true, 15),
            (
                "permessage-deflate; server_no_context_takeover; client_no_context_takeover",
                "permessage-deflate; client_no_context_takeover; server_no_context_takeover", false, 15
            ),
            (
                "permessage-deflate; server_max_window_bits=10",
                "permessage-deflate; client_no_context_takeover; server_max_window_bits=10", true, 10
            ),
            (
                "permessage-deflate; server_max_window_bits=\"9\"",
                "permessage-deflate; client_no_context_takeover; server_max_window_bits=9", true, 9
            ),
            (
                "permessage-deflate; server_max_window_bits=8",
                "permessage-deflate; client_no_context_takeover; server_max_window_bits=8", true, 8
            ),
            // A malformed first offer is declined and the next one taken.
            (
                "permessage-deflate; server_max_window_bits=16, permessage-deflate; server_no_context_takeover",
                "permessage-deflate; client_no_context_takeover; server_no_context_takeover", false, 15
            ),
            ("x-webkit-deflate-frame, Permessage-Deflate", "permessage-deflate; client_no_context_takeover", true, 15),
        ] as [(String, String, Bool, Int)])
    func theServerAcceptsTheFirstValidOffer(offer: String, response: String, takeover: Bool, bits: Int) throws {
        let (agreed, answer) = try #require(PerMessageDeflate.accept(offers: offer, maxWindowBits: 15))
        #expect(answer == response)
        #expect(agreed.serverContextTakeover == takeover && !agreed.clientContextTakeover)
        #expect(agreed.serverMaxWindowBits == bits)
        #expect(
            agreed.serverCompressionWindow == (bits == 8 ? nil : bits),
            "zlib cannot write an 8-bit window: uncompressed")
    }

    @Test(
        arguments: [
            nil, "", "x-webkit-deflate-frame", "permessage-deflate; server_max_window_bits",
            "permessage-deflate; server_max_window_bits=7", "permessage-deflate; server_max_window_bits=010",
            "permessage-deflate; client_max_window_bits=16", "permessage-deflate; server_no_context_takeover=1",
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
            "permessage-deflate; unknown=1",
        ] as [String?])
    func invalidOffersAreDeclined(offer: String?) {
        #expect(PerMessageDeflate.accept(offers: offer, maxWindowBits: 15) == nil)
    }

    @Test func theSettingBoundsTheServersWindowAndTheClientsWhenItMay() throws {
        let (bounded, answer) = try #require(
            PerMessageDeflate.accept(offers: PerMessageDeflate.clientOffer, maxWindowBits: 11))
        #expect(
            answer
                == """
                permessage-deflate; client_no_context_takeover; server_max_window_bits=11; \
                client_max_window_bits=11
                """
        )
        #expect(bounded.serverMaxWindowBits == 11 && bounded.clientMaxWindowBits == 11)
        let (_, plain) = try #require(PerMessageDeflate.accept(offers: "permessage-deflate", maxWindowBits: 11))
        #expect(
            plain == "permessage-deflate; client_no_context_takeover; server_max_window_bits=11",
            "no client_max_window_bits in the answer when the offer had none")
    }

    @Test func theClientChecksTheAnswer() throws {
        #expect(try PerMessageDeflate.accepted(response: nil).get() == nil)
        let agreed = try #require(
            try PerMessageDeflate.accepted(
                response: "permessage-deflate; client_no_context_takeover; server_max_window_bits=12"
            ).get())
        #expect(
            agreed
                == PerMessageDeflate(serverContextTakeover: true, clientContextTakeover: false, serverMaxWindowBits: 12)
        )
        for wrong in [
            "x-webkit-deflate-frame", "permessage-deflate, permessage-deflate",
            "permessage-deflate; client_max_window_bits",
            "permessage-deflate; server_max_window_bits=20", "permessage-deflate; mystery",
        ] {
            #expect(throws: ExtensionError.self, "\(wrong)") { try PerMessageDeflate.accepted(response: wrong).get() }
        }
    }
}
