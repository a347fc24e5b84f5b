/// Why an App Store Connect signing key could not be loaded. The description names the problem and,
/// for a file, its path; it never contains key material.
public typealias AppStoreSigningKeyError = CheckFailure<AppStoreSigningKeyErrorReason>

/// What was wrong with the key.
public enum AppStoreSigningKeyErrorReason: String, FailureReason, CaseIterable {
    /// The key file does not exist, is a directory, is too large or cannot be read.
    case unreadableFile = "unreadable-file"
    /// The text is not one PEM block.
    case notPEM = "not-pem"
    /// The PEM block is not an unencrypted PKCS#8 `PRIVATE KEY`.
    case notPKCS8 = "not-pkcs8"
    /// The PKCS#8 key is not an elliptic-curve P-256 key (RSA, Ed25519, P-384, …).
    case unsupportedKeyType = "unsupported-key-type"
    /// The PKCS#8 structure or the P-256 key inside it does not parse.
    case malformedKey = "malformed-key"
    /// The key id is empty or contains whitespace.
    case invalidKeyId = "invalid-key-id"
}
