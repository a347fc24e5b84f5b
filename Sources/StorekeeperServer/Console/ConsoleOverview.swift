import Foundation
import Hummingbird
import Storekeeper
import StorekeeperStorage

/// The overview: subscriptions by state, and new, renewed, churned, refunded and revenue per
/// currency per day over a range, for one app, store and environment or all of them; read from the
/// daily rollup (`overview_activity`, `overview_states`) that ``OverviewRollup`` keeps, so its cost
/// grows with the days shown, not with the customers; drawn here as SVG.
extension Console {
    static let maximumRangeDays = 366

    struct OverviewFilter: Sendable {
        var store: Store?
        var app: AppID?
        var environment: PurchaseEnvironment?

        func includes(_ slice: OverviewSlice) -> Bool {
            (store == nil || store == slice.store) && (app == nil || app == slice.app)
                && (environment == nil || environment == slice.environment)
        }
    }

    func overview(_ request: Request, _ session: ConsoleSession) async throws -> Response {
        let query = request.uri.queryParameters
        let today = Self.startOfDay(clock.now())
        var to = query.get("to").flatMap(Self.parseDay) ?? today
        var from = query.get("from").flatMap(Self.parseDay) ?? to.addingTimeInterval(-6 * 86_400)
        if from > to { swap(&from, &to) }
        if to.timeIntervalSince(from) > Double(Self.maximumRangeDays) * 86_400 {
            from = to.addingTimeInterval(-Double(Self.maximumRangeDays - 1) * 86_400)
        }
        let filter = OverviewFilter(
            store: query.get("store").flatMap(Store.init(rawValue:)),
            app: query.get("app").flatMap { $0.isEmpty ? nil : AppID($0) },
            environment: query.get("environment").flatMap(PurchaseEnvironment.init(rawValue:)))
        let range = from..<to.addingTimeInterval(86_400)
        let (recount, activity) = try await storage.transaction { transaction in
            (try await OverviewRollup.lastRecount(in: transaction), try await transaction.overviewActivity(in: range))
        }
        var byState: [OverviewState: Int] = [:]
        for count in recount?.counts ?? [] where filter.includes(count.slice) {
            byState[count.state, default: 0] += count.count
        }
        var byDay: [OverviewActivity.Kind: [Date: Int]] = [:]
        var revenue: [CurrencyCode: [Date: Int64]] = [:]
        var unpriced = 0
        for row in activity where filter.includes(row.slice) {
            guard row.kind == .revenue else {
                byDay[row.kind, default: [:]][row.day, default: 0] += row.count
                continue
            }
            if let currency = row.currency {
                revenue[currency, default: [:]][row.day, default: 0] += row.amountMicros
            } else {
                unpriced += row.count
            }
        }
        let days = stride(from: from.timeIntervalSince1970, through: to.timeIntervalSince1970, by: 86_400).map {
            Date(timeIntervalSince1970: $0)
        }
        let kinds: [OverviewActivity.Kind] = [.new, .renewed, .churned, .refunded]
        let stateRows = OverviewState.allCases.map { state -> (String, Int) in (state.rawValue, byState[state] ?? 0) }
        let totals = kinds.map { kind -> HTML in
            "<tr><td>\(kind.rawValue)</td><td class=\"total-\(kind.rawValue)\">\(byDay[kind, default: [:]].values.reduce(0, +))</td></tr>"
        }
        let currencies = revenue.keys.sorted()
        let revenueRows = currencies.map { currency -> HTML in
            let total = revenue[currency, default: [:]].values.reduce(0, +)
            return
                "<tr><td>\(currency.rawValue)</td><td class=\"revenue-\(currency.rawValue)\">\(ConsoleFormat.amount(total))</td></tr>"
        }
        let recounted = recount.map { "as recounted at \(ConsoleFormat.date($0.at))" } ?? "not counted yet"
        let body: HTML = """
            \(filterForm(filter, from: from, to: to))
            <h2>Subscriptions by state (\(recounted))</h2>
            \(ConsoleCharts.bars(stateRows, id: "states-chart"))
            <h2>Activity per day, \(ConsoleFormat.day(from)) to \(ConsoleFormat.day(to)) (UTC)</h2>
            \(ConsoleCharts.series(days: days, series: kinds.map { kind in (kind.rawValue, days.map { byDay[kind]?[$0] ?? 0 }) }, id: "activity-chart"))
            \(ConsolePages.table(["in the range", "count"], totals, empty: "", id: "activity-totals"))
            <h2>Revenue per currency per day (whole units, net of refunds)</h2>
            \(ConsoleCharts.series(days: days, series: currencies.map { currency in (currency.rawValue, days.map { Int((Double(revenue[currency]?[$0] ?? 0) / 1_000_000).rounded()) }) }, id: "revenue-chart", label: "revenue per day"))
            \(ConsolePages.table(["currency", "net revenue in the range"], revenueRows, empty: "No billing event with a reported price in the range.", id: "revenue-totals"))
            <p class="muted" id="revenue-unpriced">Billing events whose store reported no price (Google Play one-time
            products, introductory phases, history recorded before prices were kept): \(unpriced).</p>
            <p class="muted">Counts come from a rollup kept by a background job, a few seconds behind
            processing; states are recounted every few minutes. Prices are as the stores report them
            (App Store: the customer's price; Google Play: the base plan's recurring price).</p>
            """
        return html(ConsolePages.layout(title: "Overview", session: session, body), status: .ok)
    }

    func filterForm(_ filter: OverviewFilter, from: Date, to: Date) -> HTML {
        func option(_ value: String, _ label: String, _ selected: Bool) -> HTML {
            "<option value=\"\(value)\"\(selected ? " selected" : "")>\(label)</option>"
        }
        let storeOptions =
            [option("", "all stores", filter.store == nil)]
            + Store.allCases.map { option($0.rawValue, $0.rawValue, filter.store == $0) }
        let appIDs = Set(
            stores.all.flatMap { adapter -> [AppID] in
                if let apple = adapter as? AppStoreAdapter { return apple.apps.apps.map(\.id) }
                if let google = adapter as? GooglePlayAdapter { return google.apps.apps.map(\.id) }
                return []
            })
        let appOptions =
            [option("", "all apps", filter.app == nil)]
            + appIDs.sorted().map { option($0.rawValue, $0.rawValue, filter.app == $0) }
        let environmentOptions =
            [option("", "all environments", filter.environment == nil)]
            + [PurchaseEnvironment.production, .sandbox].map {
                option($0.rawValue, $0.rawValue, filter.environment == $0)
            }
        return """
            <form method="get" action="/console/overview" class="card row" id="overview-filter">
              <label>Store <select name="store">\(storeOptions)</select></label>
              <label>App <select name="app">\(appOptions)</select></label>
              <label>Environment <select name="environment">\(environmentOptions)</select></label>
              <label>From <input type="date" name="from" value="\(ConsoleFormat.day(from))"></label>
              <label>To <input type="date" name="to" value="\(ConsoleFormat.day(to))"></label>
              <button type="submit">Show</button>
            </form>
            """
    }

    static func startOfDay(_ date: Date) -> Date {
        Date(timeIntervalSince1970: (date.timeIntervalSince1970 / 86_400).rounded(.down) * 86_400)
    }

    static func parseDay(_ text: String) -> Date? {
        guard let date = try? Date(text + "T00:00:00Z", strategy: .iso8601) else { return nil }
        return startOfDay(date)
    }
}

/// SVG charts drawn on the server: numbers become rectangles and polylines, labels are escaped
/// text like everything else.
enum ConsoleCharts {
    static let palette = ["#2f5bd3", "#12b76a", "#f79009", "#d92d20", "#7a5af8"]

    /// Horizontal bars, one per label.
    static func bars(_ rows: [(String, Int)], id: String) -> HTML {
        let width = 640
        let rowHeight = 26
        let labelWidth = 130
        let maximum = max(rows.map(\.1).max() ?? 0, 1)
        let bars = rows.enumerated().map { index, row -> HTML in
            let y = index * rowHeight + 8
            let length = Int(Double(width - labelWidth - 70) * Double(row.1) / Double(maximum))
            return """
                <text x="8" y="\(y + 15)">\(row.0)</text>\
                <rect x="\(labelWidth)" y="\(y)" width="\(max(length, row.1 > 0 ? 2 : 0))" height="18" fill="\(palette[index % palette.count])"><title>\(row.0): \(row.1)</title></rect>\
                <text x="\(labelWidth + length + 6)" y="\(y + 15)" class="value">\(row.1)</text>
                """
        }
        let height = rows.count * rowHeight + 16
        return """
            <svg id="\(id)" role="img" aria-label="subscriptions by state" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)" xmlns="http://www.w3.org/2000/svg">\(bars)</svg>
            """
    }

    /// One line per series over the days, with a legend.
    static func series(
        days: [Date], series: [(String, [Int])], id: String, label: String = "activity per day"
    ) -> HTML {
        let width = 760
        let height = 260
        let left = 44
        let bottom = 28
        let plotWidth = width - left - 12
        let plotHeight = height - bottom - 12
        let maximum = max(series.flatMap(\.1).max() ?? 0, 1)
        let step = days.count > 1 ? Double(plotWidth) / Double(days.count - 1) : 0
        func x(_ index: Int) -> Int { left + Int(Double(index) * step) }
        func y(_ value: Int) -> Int { 12 + plotHeight - Int(Double(plotHeight) * Double(value) / Double(maximum)) }
        let lines = series.enumerated().map { index, line -> HTML in
            let points = line.1.enumerated().map { "\(x($0.offset)),\(y($0.element))" }.joined(separator: " ")
            let color = palette[index % palette.count]
            return """
                <polyline fill="none" stroke="\(color)" stroke-width="2" points="\(points)"><title>\(line.0)</title></polyline>
                """
        }
        let labelEvery = max(days.count / 8, 1)
        let axis = days.enumerated().filter { $0.offset % labelEvery == 0 }.map { index, day -> HTML in
            "<text x=\"\(x(index))\" y=\"\(height - 8)\" text-anchor=\"middle\">\(String(ConsoleFormat.day(day).dropFirst(5)))</text>"
        }
        let legend = series.enumerated().map { index, line -> HTML in
            let total = line.1.reduce(0, +)
            return """
                <span><svg width="12" height="12" class="swatch" aria-hidden="true"><rect width="12" height="12" fill="\(palette[index % palette.count])"/></svg>\(line.0) (\(total))</span>
                """
        }
        return """
            <svg id="\(id)" role="img" aria-label="\(label)" width="\(width)" height="\(height)" viewBox="0 0 \(width) \(height)" xmlns="http://www.w3.org/2000/svg">\
            <line x1="\(left)" y1="\(12 + plotHeight)" x2="\(width - 12)" y2="\(12 + plotHeight)" stroke="#98a2b3"/>\
            <text x="4" y="20">\(maximum)</text><text x="4" y="\(12 + plotHeight)">0</text>\(axis)\(lines)</svg>
            <p class="legend">\(legend)</p>
            """
    }
}
