import Foundation

/// `redis://[:password@]host[:port][/db]`.
public struct RedisURL: Sendable, Hashable {
    public var host: String
    public var port: Int
    public var password: String?
    public var database: Int

    /// An address with no password, database 0 (a Sentinel's).
    public init(host: String, port: Int) {
        self.host = host
        self.port = port
        password = nil
        database = 0
    }

    public init?(_ text: String) {
        guard let components = URLComponents(string: text), components.scheme == "redis", let host = components.host
        else {
            return nil
        }
        self.host = host.isEmpty ? "127.0.0.1" : host
        port = components.port ?? 6379
        password = components.password.flatMap { $0.isEmpty ? nil : $0 }
        let path = components.path.trimmingCharacters(in: CharacterSet(charactersIn: "/"))
        if path.isEmpty {
            database = 0
        } else if let number = Int(path), number >= 0 {
            database = number
        } else {
            return nil
        }
    }
}
