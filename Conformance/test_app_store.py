"""Apple's App Store Server Library (Python) against `storekeeper simulator`, as a user would run it.

Every signed payload is verified with the library's SignedDataVerifier and the simulator's root
(online checks off, except in the OCSP test), every App Store Server API endpoint the simulator
serves is called through AppStoreServerAPIClient, and every date on the wire is checked to be an
integer number of milliseconds.
"""

import json
import uuid
import warnings

import pytest
import requests
from appstoreserverlibrary.api_client import APIError, APIException, AppStoreServerAPIClient, GetTransactionHistoryVersion
from appstoreserverlibrary.models.ConsumptionRequest import ConsumptionRequest
from appstoreserverlibrary.models.ConsumptionRequestV1 import ConsumptionRequestV1
from appstoreserverlibrary.models.DeliveryStatus import DeliveryStatus
from appstoreserverlibrary.models.Environment import Environment
from appstoreserverlibrary.models.ExtendReasonCode import ExtendReasonCode
from appstoreserverlibrary.models.ExtendRenewalDateRequest import ExtendRenewalDateRequest
from appstoreserverlibrary.models.MassExtendRenewalDateRequest import MassExtendRenewalDateRequest
from appstoreserverlibrary.models.NotificationHistoryRequest import NotificationHistoryRequest
from appstoreserverlibrary.models.NotificationTypeV2 import NotificationTypeV2
from appstoreserverlibrary.models.OrderLookupStatus import OrderLookupStatus
from appstoreserverlibrary.models.RefundPreference import RefundPreference
from appstoreserverlibrary.models.Status import Status
from appstoreserverlibrary.models.TransactionHistoryRequest import Order, TransactionHistoryRequest
from appstoreserverlibrary.models.Type import Type
from appstoreserverlibrary.models.UpdateAppAccountTokenRequest import UpdateAppAccountTokenRequest
from appstoreserverlibrary.signed_data_verifier import SignedDataVerifier
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from conftest import date_members, fractional_dates, load_json_keeping_fractions

BUNDLE_ID = "com.example.conformance"
APP_APPLE_ID = 1234567890
KEY_ID = "CONFORM001"
ISSUER_ID = "57246542-96fe-1a63-e053-0824d011072a"
DAY = 86400


@pytest.fixture(scope="module")
def app(simulator, receiver):
    """A sandbox app with 3 days of billing grace, its products, and an API key."""
    simulator.post("/appstore/apps", {
        "bundleId": BUNDLE_ID, "appAppleId": APP_APPLE_ID, "environment": "Sandbox",
        "notificationURL": receiver.url + "/apple", "gracePeriodDays": 3,
    })
    simulator.post("/appstore/products", {
        "productId": "pro.monthly", "bundleId": BUNDLE_ID, "kind": "autoRenewable", "price": 9990,
        "currency": "USD", "subscriptionGroupIdentifier": "pro", "groupLevel": 1, "period": "P1M",
    })
    simulator.post("/appstore/products", {
        "productId": "coins.100", "bundleId": BUNDLE_ID, "kind": "consumable", "price": 990, "currency": "USD",
    })
    key = ec.generate_private_key(ec.SECP256R1())
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    simulator.post("/appstore/api-keys", {"keyId": KEY_ID, "publicKeyPEM": public_pem})
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())


@pytest.fixture(scope="module")
def client(simulator, app):
    """Apple's client, pointed at the simulator: the library (3.x) has no base-URL parameter, so
    `_base_url`, which it prefixes to every path, is set after construction (docs/simulator.md)."""
    api = AppStoreServerAPIClient(app, KEY_ID, ISSUER_ID, BUNDLE_ID, Environment.SANDBOX)
    api._base_url = simulator.base_url
    return api


def make_verifier(simulator, online=False):
    with open(simulator.root_certificate_path, "rb") as file:
        root = file.read()
    return SignedDataVerifier([root], online, Environment.SANDBOX, BUNDLE_ID, APP_APPLE_ID)


@pytest.fixture(scope="module")
def verifier(simulator):
    return make_verifier(simulator)


def purchase(simulator, customer, product="pro.monthly", **extra):
    return simulator.post("/appstore/purchases", {"customerId": customer, "productId": product, **extra})


def raw_api(simulator, client, method, path, body=None):
    """An API call with the library's own token, for the wire text (the library's models would
    turn a fractional date into an int)."""
    response = requests.request(
        method, simulator.base_url + path, json=body,
        headers={"Authorization": f"Bearer {client._generate_token()}"}, timeout=30)
    assert response.status_code == 200, f"{method} {path}: {response.status_code} {response.text}"
    return load_json_keeping_fractions(response.text)


def assert_whole_milliseconds(value):
    fractional = fractional_dates(value)
    assert not fractional, f"dates that are not whole milliseconds: {fractional[:5]}"


def test_transaction_info_verifies_with_apples_verifier(simulator, client, verifier):
    bought = purchase(simulator, "ana", appAccountToken=str(uuid.uuid4()))
    answer = client.get_transaction_info(bought["transactionId"])
    transaction = verifier.verify_and_decode_signed_transaction(answer.signedTransactionInfo)
    assert transaction.transactionId == bought["transactionId"]
    assert transaction.originalTransactionId == bought["originalTransactionId"]
    assert transaction.bundleId == BUNDLE_ID
    assert transaction.productId == "pro.monthly"
    assert transaction.type == Type.AUTO_RENEWABLE_SUBSCRIPTION
    assert transaction.environment == Environment.SANDBOX
    assert transaction.subscriptionGroupIdentifier == "pro"
    assert transaction.price == 9990 and transaction.currency == "USD"
    assert transaction.expiresDate > transaction.purchaseDate
    assert isinstance(transaction.signedDate, int)
    assert_whole_milliseconds(raw_api(simulator, client, "GET", f"/inApps/v1/transactions/{bought['transactionId']}"))


def test_every_date_is_whole_milliseconds_on_an_accelerated_clock(simulator, client):
    """The simulator runs at a non-zero rate: its now falls between milliseconds, yet every date in
    signed payloads, notifications and API answers is an integer, as Apple sends them."""
    bought = purchase(simulator, "dates")
    coins = purchase(simulator, "dates", "coins.100")
    simulator.post(f"/appstore/transactions/{coins['transactionId']}/refund", {})
    simulator.post(f"/appstore/subscriptions/{bought['originalTransactionId']}/fail-billing")
    simulator.advance(31 * DAY)  # the renewal fails: a grace period
    any_id = bought["transactionId"]
    now = simulator.now_ms()
    answers = [
        raw_api(simulator, client, "GET", f"/inApps/v1/transactions/{any_id}"),
        raw_api(simulator, client, "GET", f"/inApps/v1/subscriptions/{any_id}"),
        raw_api(simulator, client, "GET", f"/inApps/v2/history/{any_id}"),
        raw_api(simulator, client, "GET", f"/inApps/v2/refund/lookup/{any_id}"),
        raw_api(simulator, client, "GET", f"/inApps/v1/transactions/appTransactions/{any_id}"),
        raw_api(simulator, client, "POST", "/inApps/v1/notifications/history",
                {"startDate": now - 3 * DAY * 1000, "endDate": now + DAY * 1000}),
    ]
    for answer in answers:
        assert_whole_milliseconds(answer)
    names = set().union(*(date_members(answer) for answer in answers))
    for expected in ["signedDate", "purchaseDate", "originalPurchaseDate", "expiresDate", "revocationDate",
                     "renewalDate", "recentSubscriptionStartDate", "gracePeriodExpiresDate", "attemptDate",
                     "receiptCreationDate"]:
        assert expected in names, f"no {expected} in the answers"


def test_transaction_history_pages_and_sorts(simulator, client, verifier):
    first = purchase(simulator, "bo", "coins.100")
    for _ in range(21):
        purchase(simulator, "bo", "coins.100")
    seen, revision = [], None
    while True:
        page = client.get_transaction_history(
            first["transactionId"], revision, TransactionHistoryRequest(sort=Order.ASCENDING),
            GetTransactionHistoryVersion.V2)
        assert page.bundleId == BUNDLE_ID and page.appAppleId == APP_APPLE_ID
        assert page.environment == Environment.SANDBOX
        seen += [verifier.verify_and_decode_signed_transaction(signed) for signed in page.signedTransactions]
        revision = page.revision
        if not page.hasMore:
            break
    assert len(seen) == 22
    assert seen[0].transactionId == first["transactionId"]
    assert [t.purchaseDate for t in seen] == sorted(t.purchaseDate for t in seen)
    descending = client.get_transaction_history(
        first["transactionId"], None, TransactionHistoryRequest(sort=Order.DESCENDING, productIds=["coins.100"]),
        GetTransactionHistoryVersion.V2)
    newest = verifier.verify_and_decode_signed_transaction(descending.signedTransactions[0])
    assert newest.transactionId == seen[-1].transactionId


def test_subscription_statuses(simulator, client, verifier):
    bought = purchase(simulator, "cy")
    answer = client.get_all_subscription_statuses(bought["transactionId"])
    assert answer.bundleId == BUNDLE_ID and answer.environment == Environment.SANDBOX
    [group] = answer.data
    assert group.subscriptionGroupIdentifier == "pro"
    [last] = group.lastTransactions
    assert last.status == Status.ACTIVE
    assert last.originalTransactionId == bought["originalTransactionId"]
    transaction = verifier.verify_and_decode_signed_transaction(last.signedTransactionInfo)
    renewal = verifier.verify_and_decode_renewal_info(last.signedRenewalInfo)
    assert renewal.originalTransactionId == bought["originalTransactionId"]
    assert renewal.autoRenewProductId == "pro.monthly" and renewal.autoRenewStatus == 1
    assert renewal.renewalDate == transaction.expiresDate
    filtered = client.get_all_subscription_statuses(bought["transactionId"], [Status.EXPIRED])
    assert all(not group.lastTransactions for group in filtered.data)


def test_notifications_delivered_and_in_history(simulator, client, verifier, receiver):
    bought = purchase(simulator, "di")
    simulator.post("/appstore/settle")
    delivered = [verifier.verify_and_decode_notification(json.loads(body)["signedPayload"])
                 for _, _, body in receiver.drain("/apple")]
    mine = [n for n in delivered if n.data and n.data.signedTransactionInfo
            and verifier.verify_and_decode_signed_transaction(n.data.signedTransactionInfo).originalTransactionId
            == bought["originalTransactionId"]]
    assert [n.notificationType for n in mine] == [NotificationTypeV2.SUBSCRIBED]
    assert mine[0].data.bundleId == BUNDLE_ID and mine[0].data.appAppleId == APP_APPLE_ID

    now = simulator.now_ms()
    history = client.get_notification_history(None, NotificationHistoryRequest(
        startDate=now - DAY * 1000, endDate=now + DAY * 1000, transactionId=bought["transactionId"]))
    assert not history.hasMore
    [item] = history.notificationHistory
    notification = verifier.verify_and_decode_notification(item.signedPayload)
    assert notification.notificationUUID == mine[0].notificationUUID
    assert item.sendAttempts and item.sendAttempts[0].sendAttemptResult is not None
    assert isinstance(item.sendAttempts[0].attemptDate, int)


def test_test_notification(simulator, client, verifier):
    token = client.request_test_notification().testNotificationToken
    simulator.post("/appstore/settle")
    status = client.get_test_notification_status(token)
    notification = verifier.verify_and_decode_notification(status.signedPayload)
    assert notification.notificationType == NotificationTypeV2.TEST
    assert status.sendAttempts


def test_refund_history(simulator, client, verifier):
    first = purchase(simulator, "ed", "coins.100")
    second = purchase(simulator, "ed", "coins.100")
    simulator.post(f"/appstore/transactions/{second['transactionId']}/refund", {})
    answer = client.get_refund_history(first["transactionId"], None)
    refunded = [verifier.verify_and_decode_signed_transaction(signed) for signed in answer.signedTransactions]
    assert [t.transactionId for t in refunded] == [second["transactionId"]]
    assert isinstance(refunded[0].revocationDate, int)
    assert refunded[0].revocationReason is not None
    assert not answer.hasMore


def test_app_transaction_info(simulator, client, verifier):
    bought = purchase(simulator, "flo", "coins.100")
    answer = client.get_app_transaction_info(bought["transactionId"])
    app_transaction = verifier.verify_and_decode_app_transaction(answer.signedAppTransactionInfo)
    assert app_transaction.bundleId == BUNDLE_ID
    assert app_transaction.receiptType == Environment.SANDBOX
    assert app_transaction.appTransactionId
    assert isinstance(app_transaction.originalPurchaseDate, int)


def test_look_up_order_id(simulator, client, verifier):
    bought = purchase(simulator, "gus", "coins.100")
    # The simulator's order ids are "SIM" + the transaction id (a receipt e-mail's order id at Apple).
    answer = client.look_up_order_id("SIM" + bought["transactionId"])
    assert answer.status == OrderLookupStatus.VALID
    [signed] = answer.signedTransactions
    assert verifier.verify_and_decode_signed_transaction(signed).transactionId == bought["transactionId"]
    assert client.look_up_order_id("NOSUCHORDER").status == OrderLookupStatus.INVALID


def test_consumption_information(simulator, client):
    bought = purchase(simulator, "hal", "coins.100")
    client.send_consumption_information(bought["transactionId"], ConsumptionRequest(
        customerConsented=True, sampleContentProvided=False, deliveryStatus=DeliveryStatus.DELIVERED,
        consumptionPercentage=25000, refundPreference=RefundPreference.GRANT_PRORATED))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        client.send_consumption_data(bought["transactionId"], ConsumptionRequestV1(
            customerConsented=True, sampleContentProvided=False))
    with pytest.raises(APIException) as refused:
        client.send_consumption_information(bought["transactionId"], ConsumptionRequest(
            customerConsented=False, sampleContentProvided=False, deliveryStatus=DeliveryStatus.DELIVERED))
    assert refused.value.http_status_code == 400


def test_set_app_account_token_and_finish(simulator, client, verifier):
    bought = purchase(simulator, "ida")
    token = str(uuid.uuid4())
    client.set_app_account_token(bought["originalTransactionId"], UpdateAppAccountTokenRequest(appAccountToken=token))
    transaction = verifier.verify_and_decode_signed_transaction(
        client.get_transaction_info(bought["transactionId"]).signedTransactionInfo)
    assert transaction.appAccountToken == token
    client.finish_transaction(bought["transactionId"])


def test_renewal_date_extensions(simulator, client, verifier):
    bought = purchase(simulator, "jo")
    before = verifier.verify_and_decode_signed_transaction(
        client.get_transaction_info(bought["transactionId"]).signedTransactionInfo).expiresDate
    extended = client.extend_subscription_renewal_date(bought["originalTransactionId"], ExtendRenewalDateRequest(
        extendByDays=3, extendReasonCode=ExtendReasonCode.CUSTOMER_SATISFACTION, requestIdentifier=str(uuid.uuid4())))
    assert extended.success
    assert extended.originalTransactionId == bought["originalTransactionId"]
    assert extended.effectiveDate == before + 3 * DAY * 1000

    request_id = str(uuid.uuid4())
    mass = client.extend_renewal_date_for_all_active_subscribers(MassExtendRenewalDateRequest(
        extendByDays=1, extendReasonCode=ExtendReasonCode.CUSTOMER_SATISFACTION, requestIdentifier=request_id,
        productId="pro.monthly", storefrontCountryCodes=["USA"]))
    assert mass.requestIdentifier == request_id
    status = client.get_status_of_subscription_renewal_date_extensions(request_id, "pro.monthly")
    assert status.requestIdentifier == request_id
    assert status.complete
    assert status.succeededCount >= 1
    assert isinstance(status.completeDate, int)
    assert_whole_milliseconds(raw_api(
        simulator, client, "GET", f"/inApps/v1/subscriptions/extend/mass/pro.monthly/{request_id}"))


def test_errors_are_apples(simulator, client):
    with pytest.raises(APIException) as missing:
        client.get_transaction_info("9999999999999999")
    assert missing.value.http_status_code == 404
    assert missing.value.api_error == APIError.TRANSACTION_ID_NOT_FOUND
    with pytest.raises(APIException) as invalid:
        client.get_transaction_info("not-a-number")
    assert invalid.value.http_status_code == 400
    assert invalid.value.api_error == APIError.INVALID_TRANSACTION_ID


def test_online_verification_with_ocsp(simulator, client):
    """Apple's verifier with online checks on asks the simulator's OCSP responder (named in the
    certificates) and accepts its answers, identified by key hash as Apple's are."""
    bought = purchase(simulator, "kim", "coins.100")
    signed = client.get_transaction_info(bought["transactionId"]).signedTransactionInfo
    transaction = make_verifier(simulator, online=True).verify_and_decode_signed_transaction(signed)
    assert transaction.transactionId == bought["transactionId"]


def test_tokens_from_the_real_clock_work_after_a_simulated_month(simulator, client, verifier):
    """The library makes its tokens from the real clock; the simulator judges them on it, so they
    keep working after the simulated clock moves a month, while the subscription renews."""
    bought = purchase(simulator, "lee")
    simulator.advance(31 * DAY)
    history = client.get_transaction_history(
        bought["transactionId"], None, TransactionHistoryRequest(productIds=["pro.monthly"]),
        GetTransactionHistoryVersion.V2)
    transactions = [verifier.verify_and_decode_signed_transaction(signed) for signed in history.signedTransactions]
    assert len([t for t in transactions if t.originalTransactionId == bought["originalTransactionId"]]) == 2
    assert make_verifier(simulator, online=True).verify_and_decode_signed_transaction(
        history.signedTransactions[0]).bundleId == BUNDLE_ID
