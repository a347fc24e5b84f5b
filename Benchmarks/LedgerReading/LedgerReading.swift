import Benchmark
import Foundation
import Storekeeper

// How reading a customer's ledger for the share of one purchase's credits spent
// (`ConsumedShare.spent`, a refund consumption answer and a consumable's ownership transfer) grows
// with the ledger: `consumed-share-2k-entries` against `consumed-share-20k-entries`, the same mix
// (one credit of 100 coins in ten, nine debits of 10) ten times as long. Read in one pass, the
// longer one takes about ten times as long; searching the credits for each debit, as it once did,
// it took about a hundred times as long.
let benchmarks: @Sendable () -> Void = {
    let configuration = Benchmark.Configuration(
        metrics: [.throughput, .wallClock, .mallocCountTotal],
        warmupIterations: 5,
        scalingFactor: .one,
        maxDuration: .seconds(3),
        maxIterations: 10_000
    )
    for entries in [2_000, 20_000] {
        let ledger = LedgerFixture.ledger(entries: entries)
        // The oldest purchase's credits: the debits take from them first.
        Benchmark("consumed-share-\(entries / 1_000)k-entries", configuration: configuration) { benchmark in
            for _ in benchmark.scaledIterations {
                blackHole(ConsumedShare.spent("t0", in: ledger, balance: "coins"))
            }
        }
    }
}

enum LedgerFixture {
    /// A coin buyer's ledger of `entries` entries: each tenth a purchase of 100 coins, the others
    /// debits of 10, so every purchase is spent by the time the next comes.
    static func ledger(entries: Int) -> [LedgerEntry] {
        let customer = CustomerID("heavy-spender")
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        return (0..<entries).map { index in
            let purchase = index % 10 == 0
            return LedgerEntry(
                customerID: customer, balance: "coins", amount: purchase ? 100 : -10,
                reason: purchase ? .purchase : .debit, idempotencyKey: "entry-\(index)",
                transactionID: purchase ? "t\(index / 10)" : nil, createdAt: start + Double(index))
        }
    }
}
