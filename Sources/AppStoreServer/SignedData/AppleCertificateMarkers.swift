public import SwiftASN1

/// The extensions Apple puts on the certificates that sign App Store data.
public enum AppleCertificateMarkers {
    /// On the Apple Worldwide Developer Relations intermediate CA.
    public static let wwdrIntermediate: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 2, 1]
    /// On the leaf that signs App Store receipts and signed data.
    public static let receiptSigner: ASN1ObjectIdentifier = [1, 2, 840, 113635, 100, 6, 11, 1]
}
