"""promotion-publisher: a kopf operator of a custom resource (the shop's Promotion CRD,
docs/examples/shop/50-promotions.yaml). It publishes each Promotion's offer in its status,
keeps it current when the spec changes, and retires it on deletion (kopf's finalizer holds
the object until the handler ran). Run it against a chaoskube cluster:

    chaoskube serve --manifests docs/examples/shop \\
        --run 'kopf run --standalone -A docs/operators/promotion_publisher.py'
"""

import kopf

GROUP, VERSION, PLURAL = "shop.example.com", "v1", "promotions"


@kopf.on.create(GROUP, VERSION, PLURAL)
@kopf.on.update(GROUP, VERSION, PLURAL, field="spec")
def publish(spec, patch, **_):
    patch.status["offer"] = f"{spec.get('discountPercent')}% off for {spec.get('audience', 'everyone')}"


@kopf.on.delete(GROUP, VERSION, PLURAL)
def retire(name, logger, **_):
    logger.info(f"promotion {name} retired")
