import AppStoreServer
import Foundation
public import StoreCore
public import Storekeeper
public import StorekeeperStorage

/// App transactions (seed 000): the signed `AppTransaction` an app gets from StoreKit, submitted by
/// its backend, links the customer to its `appTransactionId` — one per Apple Account per app
/// download, carried by every transaction, family members' included (they carry no account token).
/// Purchases that name it reach the customer, now and later.
public struct AppTransactionService: Sendable {
    let storage: any Storage
    let apps: AppStoreApps
    let recorder: PurchaseRecorder
    let policies: Policies
    let clock: any WallClock

    public init(
        storage: any Storage, apps: AppStoreApps, recorder: PurchaseRecorder, policies: Policies, clock: any WallClock
    ) {
        self.storage = storage
        self.apps = apps
        self.recorder = recorder
        self.policies = policies
        self.clock = clock
    }

    /// Verifies `signedAppTransaction` like any signed payload (the app's chain, bundle id,
    /// environment and — in Production — app Apple id), links it to the customer under the
    /// ownership policy, and links the unclaimed purchases that carry it. Returns the link.
    public func submit(_ signedAppTransaction: String, for id: CustomerID) async throws -> AppTransactionLink {
        let verified: AppTransaction
        do {
            verified = try await apps.verify(signedAppTransaction, as: AppTransaction.self)
        } catch let error as ServerError {
            throw error
        } catch let error as SignedDataVerificationError {
            throw ServerError(.invalidSignedData, "\(error.reason.rawValue): \(error.detail)", underlying: error)
        }
        guard let appTransactionID = verified.appTransactionId, !appTransactionID.isEmpty,
            let bundleID = verified.bundleId, let environment = AppStoreFacts.environment(verified.receiptType)
        else {
            throw ServerError(.malformedPayload, "the app transaction lacks appTransactionId, bundleId or receiptType")
        }
        let now = clock.now()
        let link = AppTransactionLink(
            app: AppID(bundleID), appTransactionID: appTransactionID, environment: environment, customerID: id,
            linkedAt: now)
        let (recorder, policy) = (recorder, policies.ownershipConflict)
        return try await storage.transaction { transaction in
            guard try await transaction.customer(id) != nil else { throw ServerError.customerNotFound(id) }
            if let existing = try await transaction.appTransactionLink(app: link.app, id: appTransactionID) {
                if existing.customerID == id { return existing }
                let moves =
                    switch policy {
                    case .keep: false
                    case .transfer: true
                    case .transferIfNoActive:
                        // Read only here: the owner's purchases may be thousands of coin packs, and
                        // the other policies decide without them.
                        try await !transaction.purchases(of: existing.customerID).contains {
                            $0.app == link.app && $0.appTransactionID == appTransactionID && $0.grantsAccess(at: now)
                        }
                    }
                guard moves else {
                    throw ServerError(
                        .ownershipConflict,
                        "app transaction \(appTransactionID) belongs to another customer and the ownership policy keeps it there"
                    )
                }
            }
            try await transaction.saveAppTransactionLink(link)
            try await recorder.claimUnlinked(for: link, in: transaction, at: now)
            return link
        }
    }
}
