// SPDX-License-Identifier: MIT
pragma solidity ^0.8.27;

import {BatchSettlement, ChannelConfig, VoucherClaim} from "../../src/x402/BatchSettlement.sol";
import {BatchSettlementHarness} from "./BatchSettlementHarness.sol";

/// One channel driven as the gateway and its payer drive it: deposits, vouchers charged within the balance (none
/// while a withdrawal is pending), claims, settlements, cooperative refunds (the charged voucher claimed first, as
/// the package's refund does) and the payer's withdrawal (the redeemer claims once it sees it pending). Ghost sums
/// record every unit in and out.
contract ChannelHandler is BatchSettlementHarness {
    ChannelConfig internal c;
    bytes32 public id;
    uint256 public deposited;
    uint256 public settled;
    uint256 public refunded;
    uint256 public withdrawn;
    uint128 public charged;
    bytes public chargedSignature;
    bool internal pending;
    uint256 public refundNonceUsed;

    constructor() {
        super.setUp();
        c = config(0);
        id = channelIdOf(c);
    }

    /// only the handler's constructor prepares the chain
    function setUp() public pure override {}

    function channelConfig() external view returns (ChannelConfig memory) {
        return c;
    }

    function depositSome(uint256 amount) external {
        uint128 a = uint128(bound(amount, 1, 1e9));
        deposit(c, a);
        deposited += a;
    }

    /// the gateway charges a voucher for a call: at most the balance, none while a withdrawal is pending
    function charge(uint256 price) external {
        (uint128 balance,) = channel(id);
        if (pending || balance <= charged) return;
        charged += uint128(bound(price, 1, balance - charged));
        chargedSignature = sign(PAYER_KEY, voucherDigest(id, charged));
    }

    function claim() public {
        (, uint128 claimed) = channel(id);
        if (charged <= claimed) return;
        VoucherClaim[] memory claims = one(VoucherClaim(voucherClaim(c, charged, charged, PAYER_KEY).voucher, chargedSignature, charged));
        vm.prank(receiverAuthorizer);
        bs.claim(claims);
    }

    function settle() external {
        (uint128 totalClaimed, uint128 totalSettled) = receiverState();
        if (totalClaimed == totalSettled) return;
        bs.settle(RECEIVER, address(usdc));
        settled += totalClaimed - totalSettled;
    }

    function refund(uint256 amount, bool signed) external {
        claim();
        (uint128 balance, uint128 claimed) = channel(id);
        if (balance == claimed) return;
        uint128 a = uint128(bound(amount, 1, 2 * uint256(balance - claimed)));
        uint256 before = usdc.balanceOf(payer);
        if (signed) {
            uint256 nonce = bs.refundNonce(id);
            bs.refundWithSignature(c, a, nonce, sign(AUTHORIZER_KEY, refundDigest(id, nonce, a)));
        } else {
            vm.prank(receiverAuthorizer);
            bs.refund(c, a);
        }
        refunded += usdc.balanceOf(payer) - before;
        refundNonceUsed++;
        if (balance - (usdc.balanceOf(payer) - before) == claimed) pending = false;
    }

    function initiateWithdraw(uint256 amount) external {
        (uint128 balance, uint128 claimed) = channel(id);
        if (pending || balance == claimed) return; // the official rule: one announcement at a time, of at most what is unclaimed
        vm.prank(payer);
        bs.initiateWithdraw(c, uint128(bound(amount, 1, uint256(balance - claimed))));
        pending = true;
    }

    function finalizeWithdraw() external {
        if (!pending) return;
        vm.warp(block.timestamp + DELAY);
        claim(); // the redeemer saw the withdrawal pending
        uint256 before = usdc.balanceOf(payer);
        vm.prank(payer);
        bs.finalizeWithdraw(c);
        withdrawn += usdc.balanceOf(payer) - before;
        pending = false;
    }

    function claimable() external view returns (bool) {
        (uint128 balance, uint128 claimed) = channel(id);
        if (charged == 0) return true;
        return officialRecover(voucherDigest(id, charged), chargedSignature) == payer && charged <= balance && charged >= claimed;
    }

    function tokenHeld() external view returns (uint256) {
        return usdc.balanceOf(address(bs));
    }

    function accounts() external view returns (uint128 balance, uint128 claimed, uint128 receiverSettled) {
        (balance, claimed) = channel(id);
        (, receiverSettled) = receiverState();
    }
}

/// Forge's invariant runs over ChannelHandler: every unit is accounted for, and the charged voucher is always
/// claimable by the rule Base runs.
contract ChannelInvariantsTest {
    bool public constant IS_TEST = true;

    struct FuzzSelector {
        address addr;
        bytes4[] selectors;
    }

    ChannelHandler internal handler;

    function setUp() public {
        handler = new ChannelHandler();
    }

    function targetContracts() public view returns (address[] memory targets) {
        targets = new address[](1);
        targets[0] = address(handler);
    }

    function targetSelectors() public view returns (FuzzSelector[] memory targets) {
        bytes4[] memory s = new bytes4[](7);
        s[0] = ChannelHandler.depositSome.selector;
        s[1] = ChannelHandler.charge.selector;
        s[2] = ChannelHandler.claim.selector;
        s[3] = ChannelHandler.settle.selector;
        s[4] = ChannelHandler.refund.selector;
        s[5] = ChannelHandler.initiateWithdraw.selector;
        s[6] = ChannelHandler.finalizeWithdraw.selector;
        targets = new FuzzSelector[](1);
        targets[0] = FuzzSelector(address(handler), s);
    }

    /// funds in = settled to the receiver + refunded + withdrawn + what the contract holds
    function invariant_every_unit_accounted() public view {
        uint256 held = handler.tokenHeld();
        require(handler.deposited() == handler.settled() + handler.refunded() + handler.withdrawn() + held, "funds in = out + held");
        (uint128 balance, uint128 claimed, uint128 receiverSettled) = handler.accounts();
        require(held == balance - receiverSettled, "held = balance - settled");
        require(claimed <= balance, "claimed within the balance");
    }

    /// the voucher the gateway charged last is claimable on Base: the official signature rule, within the balance
    function invariant_charged_voucher_claimable() public view {
        require(handler.claimable(), "charged voucher claimable");
    }

    /// every refund advanced the refund nonce
    function invariant_refund_nonce_counts_refunds() public view {
        require(BatchSettlement(address(0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003)).refundNonce(handler.id()) == handler.refundNonceUsed(), "refundNonce");
    }
}
