"""Google's API client for Python (google-api-python-client with google-auth) against
`storekeeper simulator`, as a user would run it.

The client is built from the Android Publisher discovery document that ships inside
googleapiclient, authenticated with google-auth's standard service-account flow and the key file
the simulator hands out, and pointed at the simulator with `client_options={"api_endpoint": ...}`.
Every Android Publisher call the simulator serves is made, and every answer is checked field by
field against that discovery document. Pub/Sub push tokens are verified with google-auth.
"""

import base64
import json
import os
import re

import googleapiclient
import pytest
from google.auth.transport.requests import Request
from google.oauth2 import id_token, service_account
from googleapiclient.discovery import build
from googleapiclient.errors import HttpError

from conftest import fractional_dates, load_json_keeping_fractions

PACKAGE = "com.example.conformance"
SCOPES = ["https://www.googleapis.com/auth/androidpublisher"]
PUSH_AUDIENCE = "https://conformance.example/rtdn"
PUSH_ACCOUNT = "rtdn-push@conformance.iam.gserviceaccount.com"
DAY = 86400


# Google's discovery document, as the client ships it.

DISCOVERY_PATH = os.path.join(
    os.path.dirname(googleapiclient.__file__), "discovery_cache", "documents", "androidpublisher.v3.json")
with open(DISCOVERY_PATH) as _file:
    DISCOVERY = json.load(_file)
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})$")


def schema_problems(value, schema, path="$"):
    """Every way `value` departs from a discovery-document schema: members the schema does not
    document, and values of the wrong JSON type, format or enum."""
    if "$ref" in schema:
        return schema_problems(value, DISCOVERY["schemas"][schema["$ref"]], path)
    kind = schema.get("type")
    problems = []
    if kind == "object":
        if not isinstance(value, dict):
            return [f"{path}: expected an object, got {value!r}"]
        properties = schema.get("properties", {})
        for key, member in value.items():
            if key in properties:
                problems += schema_problems(member, properties[key], f"{path}.{key}")
            elif "additionalProperties" in schema:
                problems += schema_problems(member, schema["additionalProperties"], f"{path}.{key}")
            else:
                problems.append(f"{path}.{key}: not a field of {schema.get('id', 'this object')}")
    elif kind == "array":
        if not isinstance(value, list):
            return [f"{path}: expected an array, got {value!r}"]
        for index, item in enumerate(value):
            problems += schema_problems(item, schema["items"], f"{path}[{index}]")
    elif kind == "string":
        if not isinstance(value, str):
            return [f"{path}: expected a string, got {value!r}"]
        fmt = schema.get("format")
        if fmt in ("int64", "uint64") and not re.fullmatch(r"-?\d+", value):
            problems.append(f"{path}: {value!r} is not an {fmt} string")
        if fmt == "google-datetime" and not RFC3339.match(value):
            problems.append(f"{path}: {value!r} is not an RFC 3339 time")
        if fmt == "google-duration" and not re.fullmatch(r"-?\d+(\.\d+)?s", value):
            problems.append(f"{path}: {value!r} is not a duration")
        if "enum" in schema and value not in schema["enum"]:
            problems.append(f"{path}: {value!r} is not one of {schema['enum']}")
    elif kind == "integer":
        if not isinstance(value, int) or isinstance(value, bool):
            problems.append(f"{path}: expected an integer, got {value!r}")
    elif kind == "number":
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            problems.append(f"{path}: expected a number, got {value!r}")
    elif kind == "boolean":
        if not isinstance(value, bool):
            problems.append(f"{path}: expected a boolean, got {value!r}")
    elif kind == "any":
        pass
    else:
        problems.append(f"{path}: unknown schema {schema}")
    return problems


def method(dotted):
    """The discovery document's description of a method, e.g. `purchases.subscriptionsv2.get`."""
    *resources, name = dotted.split(".")
    node = DISCOVERY
    for resource in resources:
        node = node["resources"][resource]
    return node["methods"][name]


def conforms(answer, dotted):
    """Asserts `answer` is exactly what the discovery document says `dotted` returns."""
    described = method(dotted)
    if "response" in described:
        problems = schema_problems(answer, described["response"])
        assert not problems, f"{dotted}: " + "; ".join(problems)
    else:
        assert answer in ("", None, {}), f"{dotted} has no response body in the discovery document: {answer!r}"
    return answer


# Fixtures: the app, and Google's client with google-auth's standard service-account credentials.

@pytest.fixture(scope="module")
def credentials(simulator):
    return service_account.Credentials.from_service_account_file(simulator.service_account_path, scopes=SCOPES)


@pytest.fixture(scope="module")
def publisher(simulator, credentials):
    return build(
        "androidpublisher", "v3", credentials=credentials, static_discovery=True, cache_discovery=False,
        client_options={"api_endpoint": simulator.base_url + "/"})


@pytest.fixture(scope="module")
def app(simulator, receiver):
    simulator.post("/googleplay/apps", {
        "packageName": PACKAGE,
        "push": {"endpoint": receiver.url + "/google", "audience": PUSH_AUDIENCE, "serviceAccountEmail": PUSH_ACCOUNT},
    })
    simulator.post("/googleplay/subscriptions", {
        "packageName": PACKAGE, "productId": "premium",
        "basePlans": [
            {"basePlanId": "monthly", "billingPeriod": "P1M", "gracePeriod": 3 * DAY,
             "price": {"priceMicros": 4990000, "currency": "EUR"}},
            {"basePlanId": "prepaid", "billingPeriod": "P1M", "autoRenewing": False},
        ],
    })
    simulator.post("/googleplay/products", {"packageName": PACKAGE, "productId": "gems", "maxQuantity": 10})
    simulator.post("/googleplay/products", {"packageName": PACKAGE, "productId": "lifetime", "consumable": False})
    return PACKAGE


def subscribe(simulator, base_plan="monthly", **options):
    return simulator.post("/googleplay/subscription-purchases", {
        "packageName": PACKAGE, "productId": "premium", "basePlanId": base_plan, "options": options})


def buy(simulator, product="gems", quantity=1, **options):
    return simulator.post("/googleplay/product-purchases", {
        "packageName": PACKAGE, "productId": product, "quantity": quantity, "options": options})


def subscription(publisher, token):
    answer = publisher.purchases().subscriptionsv2().get(packageName=PACKAGE, token=token).execute()
    return conforms(answer, "purchases.subscriptionsv2.get")


# Tests.

def test_jwks_is_served_before_the_first_push(simulator):
    """Google always serves its keys; so does the simulator, before it has pushed anything."""
    assert simulator.get("/googleplay/pushes")["pushes"] == []
    keys = Request()(simulator.jwks_url, method="GET")
    assert keys.status == 200
    jwks = json.loads(keys.data)
    assert jwks["keys"] and all(key["kty"] == "RSA" and key["kid"] for key in jwks["keys"])


def test_google_auth_service_account_flow(simulator, credentials):
    """google-auth's standard flow: an assertion whose aud is Google's token URL, posted to the
    key file's token_uri (the simulator)."""
    credentials.refresh(Request())
    assert credentials.token and credentials.valid
    created = simulator.post("/googleplay/service-accounts", {"email": "ci@conformance.iam.gserviceaccount.com"})
    assert created["email"] == "ci@conformance.iam.gserviceaccount.com"
    assert created["key"]["token_uri"] == simulator.base_url + "/google/oauth2/token"
    other = service_account.Credentials.from_service_account_file(created["keyFile"], scopes=SCOPES)
    other.refresh(Request())
    assert other.token != credentials.token


def test_subscription_lifecycle_calls(simulator, publisher, app):
    bought = subscribe(simulator, obfuscatedExternalAccountId="account-1")
    token = bought["purchaseToken"]
    state = subscription(publisher, token)
    assert state["subscriptionState"] == "SUBSCRIPTION_STATE_ACTIVE"
    assert state["acknowledgementState"] == "ACKNOWLEDGEMENT_STATE_PENDING"
    assert state["externalAccountIdentifiers"]["obfuscatedExternalAccountId"] == "account-1"
    [item] = state["lineItems"]
    assert item["productId"] == "premium"
    assert item["latestSuccessfulOrderId"] == bought["orderId"]
    assert item["autoRenewingPlan"]["autoRenewEnabled"] is True
    assert item["offerDetails"]["basePlanId"] == "monthly"
    assert "latestOrderId" not in state

    conforms(publisher.purchases().subscriptions().acknowledge(
        packageName=PACKAGE, subscriptionId="premium", token=token, body={"developerPayload": "p"}).execute(),
        "purchases.subscriptions.acknowledge")
    assert subscription(publisher, token)["acknowledgementState"] == "ACKNOWLEDGEMENT_STATE_ACKNOWLEDGED"

    etag = subscription(publisher, token)["etag"]
    deferred = conforms(publisher.purchases().subscriptionsv2().defer(
        packageName=PACKAGE, token=token,
        body={"deferralContext": {"deferDuration": f"{DAY}s", "etag": etag}}).execute(),
        "purchases.subscriptionsv2.defer")
    assert deferred["itemExpiryTimeDetails"][0]["expiryTime"] > item["expiryTime"]

    conforms(publisher.purchases().subscriptionsv2().cancel(
        packageName=PACKAGE, token=token,
        body={"cancellationContext": {"cancellationType": "USER_REQUESTED_STOP_RENEWALS"}}).execute(),
        "purchases.subscriptionsv2.cancel")
    canceled = subscription(publisher, token)
    assert canceled["subscriptionState"] == "SUBSCRIPTION_STATE_CANCELED"
    assert "cancelTime" in canceled["canceledStateContext"]["userInitiatedCancellation"]

    conforms(publisher.purchases().subscriptionsv2().revoke(
        packageName=PACKAGE, token=token, body={"revocationContext": {"fullRefund": {}}}).execute(),
        "purchases.subscriptionsv2.revoke")
    assert subscription(publisher, token)["subscriptionState"] == "SUBSCRIPTION_STATE_EXPIRED"


def test_legacy_cancel_and_prepaid_plan(simulator, publisher, app):
    token = subscribe(simulator)["purchaseToken"]
    conforms(publisher.purchases().subscriptions().cancel(
        packageName=PACKAGE, subscriptionId="premium", token=token).execute(), "purchases.subscriptions.cancel")
    state = subscription(publisher, token)
    assert state["subscriptionState"] == "SUBSCRIPTION_STATE_CANCELED"
    assert "developerInitiatedCancellation" in state["canceledStateContext"]

    prepaid = subscription(publisher, subscribe(simulator, base_plan="prepaid", testPurchase=True)["purchaseToken"])
    assert "prepaidPlan" in prepaid["lineItems"][0]
    assert "testPurchase" in prepaid


def test_one_time_product_calls(simulator, publisher, app):
    bought = buy(simulator, quantity=3, obfuscatedExternalAccountId="account-2")
    token = bought["purchaseToken"]
    products = publisher.purchases().products()
    purchase = conforms(products.get(packageName=PACKAGE, productId="gems", token=token).execute(),
                        "purchases.products.get")
    assert purchase["orderId"] == bought["orderId"]
    assert purchase["quantity"] == 3 and purchase["purchaseState"] == 0 and purchase["consumptionState"] == 0
    assert purchase["acknowledgementState"] == 0
    assert purchase["obfuscatedExternalAccountId"] == "account-2"
    conforms(products.acknowledge(packageName=PACKAGE, productId="gems", token=token,
                                  body={"developerPayload": "delivered"}).execute(),
             "purchases.products.acknowledge")
    conforms(products.consume(packageName=PACKAGE, productId="gems", token=token).execute(),
             "purchases.products.consume")
    after = conforms(products.get(packageName=PACKAGE, productId="gems", token=token).execute(),
                     "purchases.products.get")
    assert after["consumptionState"] == 1 and after["acknowledgementState"] == 1
    assert after["developerPayload"] == "delivered"

    v2 = conforms(publisher.purchases().productsv2().getproductpurchasev2(packageName=PACKAGE, token=token).execute(),
                  "purchases.productsv2.getproductpurchasev2")
    assert v2["orderId"] == bought["orderId"]
    assert v2["productLineItem"][0]["productId"] == "gems"


def test_orders_and_voided_purchases(simulator, publisher, app):
    lifetime = buy(simulator, product="lifetime")
    sub = subscribe(simulator)
    order = conforms(publisher.orders().get(packageName=PACKAGE, orderId=lifetime["orderId"]).execute(), "orders.get")
    assert order["orderId"] == lifetime["orderId"] and order["state"] == "PROCESSED"
    assert order["purchaseToken"] == lifetime["purchaseToken"]
    conforms(publisher.orders().get(packageName=PACKAGE, orderId=sub["orderId"]).execute(), "orders.get")

    conforms(publisher.orders().refund(packageName=PACKAGE, orderId=lifetime["orderId"], revoke=True).execute(),
             "orders.refund")
    conforms(publisher.orders().refund(packageName=PACKAGE, orderId=sub["orderId"]).execute(), "orders.refund")
    assert conforms(publisher.orders().get(packageName=PACKAGE, orderId=lifetime["orderId"]).execute(),
                    "orders.get")["state"] == "REFUNDED"
    # Refunded without revoke: the subscription carries on.
    assert subscription(publisher, sub["purchaseToken"])["subscriptionState"] == "SUBSCRIPTION_STATE_ACTIVE"

    voided, token = [], None
    while True:
        page = conforms(publisher.purchases().voidedpurchases().list(
            packageName=PACKAGE, type=1, maxResults=1, token=token).execute(), "purchases.voidedpurchases.list")
        voided += page.get("voidedPurchases", [])
        token = page.get("tokenPagination", {}).get("nextPageToken")
        if not token:
            break
    mine = {v["orderId"]: v for v in voided if v["orderId"] in (lifetime["orderId"], sub["orderId"])}
    assert set(mine) == {lifetime["orderId"], sub["orderId"]}
    assert all(v["voidedSource"] == 1 for v in mine.values())  # the developer refunded them


def test_errors_are_googles(simulator, publisher, app):
    with pytest.raises(HttpError) as missing:
        publisher.purchases().subscriptionsv2().get(packageName=PACKAGE, token="no-such-token").execute()
    assert missing.value.status_code == 404
    body = json.loads(missing.value.content)
    assert body["error"]["status"] == "NOT_FOUND" and body["error"]["code"] == 404
    assert body["error"]["errors"][0]["reason"] == "purchaseTokenNotFound"
    # A call Google serves and the simulator does not: Google's answer for an unimplemented method.
    with pytest.raises(HttpError) as unsupported:
        publisher.inappproducts().list(packageName=PACKAGE).execute()
    assert unsupported.value.status_code == 501
    assert json.loads(unsupported.value.content)["error"]["status"] == "UNIMPLEMENTED"


def test_pushes_carry_oidc_tokens_google_auth_verifies(simulator, receiver, app):
    token = subscribe(simulator)["purchaseToken"]
    simulator.post("/googleplay/settle")
    pushes = receiver.drain("/google")
    assert pushes
    found = False
    for _, headers, body in pushes:
        authorization = {k.lower(): v for k, v in headers.items()}["authorization"]
        assert authorization.startswith("Bearer ")
        claims = id_token.verify_token(
            authorization[len("Bearer "):], Request(), audience=PUSH_AUDIENCE, certs_url=simulator.jwks_url)
        assert claims["iss"] == "https://accounts.google.com"
        assert claims["email"] == PUSH_ACCOUNT and claims["email_verified"] is True
        envelope = json.loads(body)
        assert envelope["subscription"]
        message = envelope["message"]
        assert message["messageId"] and RFC3339.match(message["publishTime"])
        notification = load_json_keeping_fractions(base64.b64decode(message["data"]))
        assert notification["packageName"] == PACKAGE and notification["version"] == "1.0"
        assert re.fullmatch(r"\d+", notification["eventTimeMillis"])
        assert not fractional_dates(notification)
        if notification.get("subscriptionNotification", {}).get("purchaseToken") == token:
            assert notification["subscriptionNotification"]["notificationType"] == 4  # PURCHASED
            assert notification["subscriptionNotification"]["subscriptionId"] == "premium"
            found = True
    assert found


def test_credentials_keep_working_after_a_simulated_month(simulator, publisher, credentials, app, receiver):
    """google-auth judges its cached access token on the real clock, and so does the simulator:
    after the simulated clock moves a month, the same client still works, new assertions from the
    real clock are accepted, and push tokens still verify; the subscription itself renewed."""
    bought = subscribe(simulator)
    token = bought["purchaseToken"]
    publisher.purchases().subscriptions().acknowledge(
        packageName=PACKAGE, subscriptionId="premium", token=token, body={}).execute()
    before = subscription(publisher, token)["lineItems"][0]["expiryTime"]
    simulator.advance(31 * DAY)
    state = subscription(publisher, token)  # the cached access token
    assert state["lineItems"][0]["expiryTime"] > before
    assert state["lineItems"][0]["latestSuccessfulOrderId"] == bought["orderId"] + "..0"
    credentials.refresh(Request())  # a new assertion made from the real clock
    assert subscription(publisher, token)["subscriptionState"] == "SUBSCRIPTION_STATE_ACTIVE"
    simulator.post("/googleplay/settle")
    for _, headers, _ in receiver.drain("/google"):
        authorization = {k.lower(): v for k, v in headers.items()}["authorization"]
        id_token.verify_token(
            authorization[len("Bearer "):], Request(), audience=PUSH_AUDIENCE, certs_url=simulator.jwks_url)
