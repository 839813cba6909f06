import Testing
import RoboscopeRedis

@Suite struct RedisURLTests {
    @Test func parsesHostPortPasswordAndDatabase() throws {
        let full = try #require(RedisURL("redis://:s3cret@cache.internal:6380/4"))
        #expect(full.host == "cache.internal")
        #expect(full.port == 6380)
        #expect(full.password == "s3cret")
        #expect(full.database == 4)
        let plain = try #require(RedisURL("redis://127.0.0.1"))
        #expect(plain.port == 6379)
        #expect(plain.password == nil)
        #expect(plain.database == 0)
    }

    @Test(arguments: ["http://127.0.0.1:6379", "redis://127.0.0.1:6379/x", "not a url", "redis://127.0.0.1/-1"])
    func refusesOtherURLs(_ text: String) {
        #expect(RedisURL(text) == nil)
    }
}
