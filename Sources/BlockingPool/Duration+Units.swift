extension Duration {
    /// Whole milliseconds, for `poll` and friends.
    public var milliseconds: Int32 {
        let (seconds, attoseconds) = components
        return Int32(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }

    /// Seconds as a `Double`, for `Date`, SQL intervals and rates.
    public var secondsDouble: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
