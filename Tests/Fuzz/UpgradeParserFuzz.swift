import WebSocketCodec

// libFuzzer entry point for the upgrade request parser: no crash, and a parsed
// request never claims more bytes than it was given.
@_cdecl("LLVMFuzzerTestOneInput")
public func upgradeParserFuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    let bytes = UnsafeRawBufferPointer(start: data, count: size)
    switch UpgradeParser.parse(bytes) {
    case .request(let request, let consumed):
        precondition(consumed <= size, "consumed past the input")
        precondition(request.path.hasPrefix("/"), "path without a slash")
        precondition(Base64.decodedCount(request.key) == 16, "accepted a bad key")
    case .reject(let rejection):
        precondition((400...599).contains(rejection.status), "rejection without an error status")
    case .needMore:
        precondition(size <= UpgradeParser.maxHeadSize, "waiting past the head limit")
    }
    return 0
}
