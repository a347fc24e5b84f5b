public import Foundation
public import Logging
public import Storekeeper
public import StorekeeperStorage

/// Settles purchases with their stores through their adapters and records what that changed:
/// after a notification, after a submission (with the customer's account token), and in the
/// sweeper. A failure is logged, never thrown: the purchase stays recorded, and what a store still
/// waits for stays marked for the sweeper.
public struct PurchaseSettler: Sendable {
    public let stores: StoreAdapters
    public let storage: any Storage
    public let recorder: PurchaseRecorder
    public let logger: Logger

    public init(stores: StoreAdapters, storage: any Storage, recorder: PurchaseRecorder, logger: Logger) {
        self.stores = stores
        self.storage = storage
        self.recorder = recorder
        self.logger = logger
    }

    /// Returns whether the store was told something.
    @discardableResult
    public func settle(_ purchase: Purchase, accountToken: UUID? = nil) async -> Bool {
        guard let settlement = await tellStore(purchase, accountToken: accountToken) else { return false }
        do {
            let recorder = self.recorder
            try await storage.transaction { try await recorder.record(settlement, of: purchase.key, in: $0) }
            return true
        } catch {
            logger.warning(
                "could not record a settlement; the sweeper retries what the store waits for",
                metadata: ["purchase": "\(purchase.key)", "error": "\(error)"])
            return false
        }
    }

    /// Tells the purchase's store what it waits for, without recording it: the caller records the
    /// settlement (``PurchaseRecorder/record(_:of:in:)``) in a transaction of its own choosing (the
    /// inbox, in the one that marks the notification processed). Nil when nothing was told.
    func tellStore(_ purchase: Purchase, accountToken: UUID? = nil) async -> PurchaseSettlement? {
        do {
            let settlement = try await stores(purchase.key.store).settle(purchase, accountToken: accountToken)
            if let settlement {
                logger.debug(
                    "settled a purchase with its store",
                    metadata: ["purchase": "\(purchase.key)", "settlement": "\(settlement)"])
            }
            return settlement
        } catch {
            logger.warning(
                "could not settle a purchase with its store; the sweeper retries what the store waits for",
                metadata: ["purchase": "\(purchase.key)", "error": "\(error)"])
            return nil
        }
    }

    /// Settles every purchase its store still waits to have acknowledged, oldest first, a page
    /// at a time to the end: purchases that keep failing cannot hold back newer ones. Returns how
    /// many were tried.
    @discardableResult
    public func sweepUnacknowledged(pageSize: Int = 100) async throws -> Int {
        var tried = 0
        for adapter in stores.all {
            var last: Purchase?
            while true {
                let page = try await storage.transaction { [last] in
                    try await $0.purchasesNeedingAcknowledgement(store: adapter.store, after: last, limit: pageSize)
                }
                for purchase in page { await settle(purchase) }
                tried += page.count
                guard page.count == pageSize, let next = page.last else { break }
                last = next
            }
        }
        return tried
    }
}
