/// The reasons an operation can fail, each a stable kebab-case string.
public protocol FailureReason: RawRepresentable, Hashable, Sendable where RawValue == String {}

/// A failure that names the one check that failed and explains it in one line.
///
/// Every error of the store modules has this shape (`SignedDataVerificationError`,
/// `ReceiptError`, `PushAuthenticationError`, …: each a `CheckFailure` of its own reason enum), so
/// callers switch on `reason` and show `description`. The detail never holds a secret or a whole input.
public struct CheckFailure<R: FailureReason>: Error, Hashable, Sendable, CustomStringConvertible {
    /// The reasons this error can have.
    public typealias Reason = R

    /// The check that failed.
    public var reason: R
    /// A one-line explanation with the specifics.
    public var detail: String

    /// A failure of `reason`, explained by `detail`.
    public init(_ reason: R, _ detail: String) {
        self.reason = reason
        self.detail = detail
    }

    /// `reason: detail`.
    public var description: String { "\(reason.rawValue): \(detail)" }
}
