-- AlterTable
ALTER TABLE "DeliveryReport" ADD COLUMN     "segments" INTEGER;
