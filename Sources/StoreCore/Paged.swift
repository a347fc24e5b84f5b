/// Pages of a paged store endpoint as one asynchronous sequence of elements, fetched lazily:
/// the next page is requested only when the previous one is used up.
public struct Paged<Element: Sendable>: AsyncSequence, Sendable {
    /// Fetches the page after `token` (nil: the first) and returns its elements and the next token
    /// (nil: no more pages).
    let fetch: @Sendable (_ token: String?) async throws -> (elements: [Element], next: String?)

    /// A sequence whose pages come from `fetch`: given the previous page's token (nil for the first
    /// page), it returns that page's elements and the next token (nil when there are no more pages).
    public init(fetch: @escaping @Sendable (_ token: String?) async throws -> (elements: [Element], next: String?)) {
        self.fetch = fetch
    }

    public func makeAsyncIterator() -> Iterator {
        Iterator(fetch: fetch)
    }

    public struct Iterator: AsyncIteratorProtocol {
        let fetch: @Sendable (String?) async throws -> (elements: [Element], next: String?)
        var buffer: [Element] = []
        var index = 0
        var token: String?
        var finished = false

        init(fetch: @escaping @Sendable (String?) async throws -> (elements: [Element], next: String?)) {
            self.fetch = fetch
        }

        public mutating func next() async throws -> Element? {
            while index == buffer.count {
                guard !finished else { return nil }
                let page = try await fetch(token)
                buffer = page.elements
                index = 0
                token = page.next
                finished = page.next == nil
            }
            defer { index += 1 }
            return buffer[index]
        }
    }
}
