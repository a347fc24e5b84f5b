import SwiftASN1
import X509

/// Accepts only the path leaf → the intermediate sent in `x5c[1]` → a trusted root.
///
/// The general chain builder would also accept a leaf signed directly by a root, or a path through
/// another intermediate; App Store data is always signed through exactly one intermediate, the one
/// the payload names.
struct PinnedPathPolicy: VerifierPolicy {
    let intermediate: Certificate
    let verifyingCriticalExtensions: [ASN1ObjectIdentifier] = []

    func chainMeetsPolicyRequirements(chain: UnverifiedCertificateChain) -> PolicyEvaluationResult {
        guard chain.count == 3 else {
            return .failsToMeetPolicy(reason: "path has \(chain.count) certificates; App Store paths have 3")
        }
        guard chain[1] == intermediate else {
            return .failsToMeetPolicy(reason: "path does not go through the intermediate in x5c[1]")
        }
        return .meetsPolicy
    }
}
