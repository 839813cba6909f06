import ArgumentParser
import Hummingbird
import Logging
import RoboscopeHTTP
import RoboscopePostgres
import RoboscopeRedis

/// `roboscope serve`: applies pending migrations, then serves the HTTP API until SIGTERM.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Migrate, then serve the API until SIGTERM or SIGINT.")

    @OptionGroup var common: CommonOptions

    @Option(name: .customLong("host"), help: "Address to listen on (env ROBOSCOPE_HOST, default 0.0.0.0).")
    var hostFlag: String?

    @Option(name: .customLong("http-port"), help: "HTTP port (env ROBOSCOPE_HTTP_PORT, default 8080).")
    var httpPortFlag: Int?

    @Option(name: .customLong("ws-port"), help: "WebSocket gateway port (env ROBOSCOPE_WS_PORT, default 8081).")
    var wsPortFlag: Int?

    @Option(name: .customLong("db-pool-size"), help: "Postgres connections (env ROBOSCOPE_DB_POOL_SIZE, default 16).")
    var poolSizeFlag: Int?

    @Option(name: .customLong("body-limit"), help: "Largest request body in bytes (env ROBOSCOPE_BODY_LIMIT, default 1048576).")
    var bodyLimitFlag: Int?

    @Option(name: .customLong("presence-window"), help: "Seconds a heartbeat keeps a user present (env ROBOSCOPE_PRESENCE_WINDOW, default 30).")
    var presenceWindowFlag: Int?

    func presenceWindow() throws -> Int { try presenceWindowFlag ?? Environment.int("ROBOSCOPE_PRESENCE_WINDOW") ?? 30 }

    func validate() throws {
        guard RedisURL(common.redisURL) != nil else { throw ValidationError("--redis-url must look like redis://[:password@]host[:port][/db]") }
        guard (1...3600).contains(try presenceWindow()) else { throw ValidationError("--presence-window must be 1 to 3600 seconds") }
        for (name, port) in [("http-port", try httpPort()), ("ws-port", try wsPort())] where !(1...65535).contains(port) {
            throw ValidationError("--\(name) must be between 1 and 65535")
        }
        guard try poolSize() >= 1 else { throw ValidationError("--db-pool-size must be at least 1") }
        guard try bodyLimit() >= 1024 else { throw ValidationError("--body-limit must be at least 1024") }
    }

    func httpPort() throws -> Int { try httpPortFlag ?? Environment.int("ROBOSCOPE_HTTP_PORT") ?? 8080 }
    func wsPort() throws -> Int { try wsPortFlag ?? Environment.int("ROBOSCOPE_WS_PORT") ?? 8081 }
    func poolSize() throws -> Int { try poolSizeFlag ?? Environment.int("ROBOSCOPE_DB_POOL_SIZE") ?? 16 }
    func bodyLimit() throws -> Int { try bodyLimitFlag ?? Environment.int("ROBOSCOPE_BODY_LIMIT") ?? 1 << 20 }

    func run() async throws {
        let logger = common.logger("roboscope")
        let schema = try common.schemaURL()
        do {
            let connection = try await common.connect(timeout: .seconds(60), logger: logger)
            try Migrator(directory: schema, logger: logger).migrate(connection)
        }
        let pool = PostgresPool(url: common.databaseURL, size: try poolSize(), logger: logger)
        defer { pool.shutdown() }
        let redis = RedisPool(url: RedisURL(common.redisURL)!, size: 8, logger: logger)
        defer { redis.shutdown() }
        let services = APIServices(
            store: EventStore(pool: pool), reads: ReadModels(pool: pool),
            presence: PresenceStore(redis: redis, window: .seconds(try presenceWindow())), locks: LockStore(redis: redis),
            bodyLimit: try bodyLimit()
        )
        let host = hostFlag ?? Environment.string("ROBOSCOPE_HOST") ?? "0.0.0.0"
        let port = try httpPort()
        let app = APIServer.application(services: services, host: host, port: port, logger: logger)
        logger.info("serving", metadata: ["http": "\(host):\(port)"])
        // runService() owns SIGTERM and SIGINT: it stops accepting, lets in-flight requests finish, then returns.
        try await app.runService()
        logger.info("stopped")
    }
}
