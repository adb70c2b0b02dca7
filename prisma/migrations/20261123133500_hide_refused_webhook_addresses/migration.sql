-- Attempt logs and deliveries written before refused destinations stopped naming the address
-- they resolved to: the same wording as now, without the address.
UPDATE "WebhookAttempt" SET error = 'destination not allowed (private, loopback, link-local or metadata addresses are not allowed)'
WHERE error LIKE 'forbidden address %';
UPDATE "WebhookDelivery" SET "lastError" = 'destination not allowed (private, loopback, link-local or metadata addresses are not allowed)'
WHERE "lastError" LIKE 'forbidden address %';
