/// Field limits, shared by every validator so that the documentation has one source.
public enum Limits {
    public static let keyLength = 128
    public static let nameLength = 200
    public static let descriptionLength = 4_000
    public static let urlLength = 2_048
    public static let labelLength = 200
    /// Markers in one `POST /markers/bulk`.
    public static let bulkMarkers = 5_000
}
