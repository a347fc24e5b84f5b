import Foundation

/// The console's frame and its shared pieces: layout, sign-in, refusals, confirmations.
enum ConsolePages {
    static func layout(title: String, session: ConsoleSession?, _ body: HTML) -> HTML {
        let navigation: HTML
        if let session {
            navigation = """
                <nav>
                  <a href="/console/overview">Overview</a>
                  <a href="/console/customers">Customers</a>
                  <a href="/console/notifications">Notifications</a>
                  <a href="/console/actions">Actions</a>
                  <span class="who">\(session.operatorName) · \(session.role.rawValue)</span>
                  <form method="post" action="/console/sign-out" class="inline">\(csrfField(session))<button type="submit">Sign out</button></form>
                </nav>
                """
        } else {
            navigation = ""
        }
        return """
            <!DOCTYPE html>
            <html lang="en">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(title) · Storekeeper</title>
            <link rel="stylesheet" href="/console/assets/console.css">
            <link rel="icon" href="data:,">
            </head>
            <body>
            <header><strong>Storekeeper</strong> console \(navigation)</header>
            <main>
            <h1>\(title)</h1>
            \(body)
            </main>
            </body>
            </html>
            """
    }

    static func csrfField(_ session: ConsoleSession) -> HTML {
        "<input type=\"hidden\" name=\"csrf\" value=\"\(session.csrfToken)\">"
    }

    static func signIn(message: String?) -> HTML {
        let notice: HTML = message.map { "<p class=\"error\" role=\"alert\">\($0)</p>" } ?? .empty
        return layout(
            title: "Sign in", session: nil,
            """
            \(notice)
            <form method="post" action="/console/sign-in" class="card narrow">
              <label>Operator <input name="name" id="name" autocomplete="username" required autofocus></label>
              <label>Password <input name="password" id="password" type="password" autocomplete="current-password" required></label>
              <button type="submit" id="sign-in">Sign in</button>
            </form>
            """)
    }

    static func refusal(_ message: String, session: ConsoleSession?) -> HTML {
        layout(title: "Not done", session: session, "<p class=\"error\" role=\"alert\">\(message)</p>")
    }

    /// The confirmation step of an action: the same form posted again with `confirm=yes`.
    static func confirm(
        title: String, question: String, action: String, fields: [(String, String)], cancel: String,
        session: ConsoleSession
    ) -> HTML {
        let hidden = fields.map { name, value in
            "<input type=\"hidden\" name=\"\(name)\" value=\"\(value)\">" as HTML
        }
        return layout(
            title: title, session: session,
            """
            <form method="post" action="\(action)" class="card narrow">
              <p>\(question)</p>
              \(csrfField(session))\(hidden)
              <input type="hidden" name="confirm" value="yes">
              <button type="submit" id="confirm">Yes, do it</button>
              <a href="\(cancel)" class="button secondary">Cancel</a>
            </form>
            """)
    }

    /// A small form with one button posting `action` (unconfirmed: the action asks first).
    static func button(
        _ label: String, action: String, session: ConsoleSession, fields: HTML = .empty, id: String? = nil
    )
        -> HTML
    {
        let identifier: HTML = id.map { " id=\"\($0)\"" } ?? .empty
        return """
            <form method="post" action="\(action)" class="inline">\(csrfField(session))\(fields)<button type="submit"\(identifier)>\(label)</button></form>
            """
    }

    static func table(_ headings: [String], _ rows: [HTML], empty: String, id: String? = nil) -> HTML {
        guard !rows.isEmpty else { return "<p class=\"muted\">\(empty)</p>" }
        let identifier: HTML = id.map { " id=\"\($0)\"" } ?? .empty
        let head = headings.map { "<th>\($0)</th>" as HTML }
        return "<table\(identifier)><thead><tr>\(head)</tr></thead><tbody>\(rows)</tbody></table>"
    }
}

/// The stylesheet (served at `/console/assets/console.css`, so the pages' content security policy
/// can refuse inline styles and scripts).
enum ConsoleStyle {
    static let css = """
        :root { color-scheme: light; --ink: #1d2330; --muted: #667085; --line: #d0d5dd; --accent: #2f5bd3; --bad: #b42318; --good: #067647; }
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); background: #f7f8fa; }
        header { display: flex; gap: 1rem; align-items: center; padding: .6rem 1.2rem; background: #fff; border-bottom: 1px solid var(--line); }
        nav { display: flex; gap: 1rem; align-items: center; flex: 1; }
        nav .who { margin-left: auto; color: var(--muted); }
        main { padding: 1rem 1.2rem 3rem; max-width: 1200px; }
        h1 { font-size: 1.4rem; margin: .2rem 0 1rem; }
        h2 { font-size: 1.1rem; margin: 1.6rem 0 .6rem; }
        a { color: var(--accent); }
        table { border-collapse: collapse; width: 100%; background: #fff; border: 1px solid var(--line); }
        th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
        th { background: #f2f4f7; font-weight: 600; }
        td code { overflow-wrap: anywhere; }
        #purchases td:nth-child(2) { min-width: 9rem; }
        /* An app's id wraps, as a purchase's does, rather than push the actions off the page. */
        #purchases td:nth-child(3) { overflow-wrap: anywhere; min-width: 8rem; }
        #purchases td:nth-child(8) { min-width: 6rem; }
        #purchases form.inline.extend select { max-width: 100%; }
        #timeline td:nth-child(3) { min-width: 9rem; }
        #purchases form.inline { display: block; margin: .2rem 0; }
        code, pre { font-family: ui-monospace, SFMono-Regular, Menlo, monospace; font-size: 12.5px; }
        pre { background: #fff; border: 1px solid var(--line); padding: .8rem; overflow: auto; max-height: 40rem; }
        .card { background: #fff; border: 1px solid var(--line); padding: 1rem; margin-bottom: 1rem; }
        .narrow { max-width: 28rem; }
        label { display: block; margin: .4rem 0; }
        input, select { font: inherit; padding: .3rem .4rem; border: 1px solid var(--line); }
        button, .button { font: inherit; padding: .3rem .8rem; border: 1px solid var(--accent); background: var(--accent); color: #fff; cursor: pointer; text-decoration: none; }
        .secondary { background: #fff; color: var(--accent); }
        form.inline { display: inline; }
        .error { color: var(--bad); font-weight: 600; }
        .muted { color: var(--muted); }
        .active { color: var(--good); font-weight: 600; }
        .inactive { color: var(--muted); }
        .row { display: flex; gap: 1rem; flex-wrap: wrap; align-items: end; }
        .tabs a { margin-right: 1rem; }
        .tabs a.current { font-weight: 700; text-decoration: none; color: var(--ink); }
        svg { background: #fff; border: 1px solid var(--line); }
        svg text { font: 11px system-ui, sans-serif; fill: var(--ink); }
        .legend span { display: inline-block; margin-right: 1rem; }
        .swatch { display: inline-block; width: .8rem; height: .8rem; margin-right: .3rem; vertical-align: middle; }
        """
}
