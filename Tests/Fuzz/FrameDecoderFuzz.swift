import WebSocketCodec

// libFuzzer entry point for the frame decoder. Besides not crashing, the reader must
// not care how the bytes are split: reading them in one piece and in pieces of a
// size taken from the input gives the same outputs. The first byte also says whether
// permessage-deflate was agreed (and whether the peer keeps its context), so compressed
// messages, bombs and corrupt streams are read too: inflation stays within the limit.
@_cdecl("LLVMFuzzerTestOneInput")
public func frameDecoderFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    guard size > 1 else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let step = Int(data[0] % 17) + 1
    let limit = 1 << 16
    let compression = data[0] & 0x80 == 0 ? nil : MessageReader.Compression(peerKeepsContext: data[0] & 0x40 != 0)

    var whole = MessageReader(role: .server, maxMessageSize: limit, compression: compression)
    var wholeOutputs: [MessageReader.Output] = []
    whole.feed(bytes) { wholeOutputs.append($0) }

    var pieces = MessageReader(role: .server, maxMessageSize: limit, compression: compression)
    var pieceOutputs: [MessageReader.Output] = []
    var index = 0
    while index < bytes.count {
        let end = min(index + step, bytes.count)
        pieces.feed(Array(bytes[index..<end])) { pieceOutputs.append($0) }
        index = end
    }
    precondition(wholeOutputs == pieceOutputs, "split-dependent decoding")
    for output in wholeOutputs {
        if case .message(let opcode, let payload) = output {
            precondition(payload.count <= limit, "message over the limit")
            if opcode == .text {
                var validator = UTF8Validator()
                precondition(validator.feed(payload) && validator.isComplete, "invalid UTF-8 delivered")
            }
        }
    }
    return 0
}
