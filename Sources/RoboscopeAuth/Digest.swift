import Crypto
import Foundation

/// SHA-256 as lowercase hex: how secrets are compared and stored without being kept
/// (static API tokens, lock tokens, idempotency claims).
public enum Digest {
    public static func sha256Hex(_ text: String) -> String {
        SHA256.hash(data: Data(text.utf8)).map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}
