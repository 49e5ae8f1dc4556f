// SPDX-License-Identifier: MIT
pragma solidity ^0.8.27;

import {TestUSDC} from "../../src/TestUSDC.sol";
import {ISignatureTransfer, Permit2SignatureTransfer} from "../../src/x402/Permit2SignatureTransfer.sol";
import {X402UptoPermit2Proxy} from "../../src/x402/X402UptoPermit2Proxy.sol";

/// a log as Forge's recordLogs keeps it
struct VmLog {
    bytes32[] topics;
    bytes data;
    address emitter;
}

/// The Forge cheatcodes these tests use
interface Vm {
    function recordLogs() external;
    function getRecordedLogs() external returns (VmLog[] memory);
    function etch(address target, bytes calldata code) external;
    function store(address target, bytes32 slot, bytes32 value) external;
    function prank(address sender) external;
    function warp(uint256 timestamp) external;
    function chainId(uint256 id) external;
    function addr(uint256 privateKey) external returns (address);
    function sign(uint256 privateKey, bytes32 digest) external returns (uint8 v, bytes32 r, bytes32 s);
    function expectRevert(bytes calldata revertData) external;
    function expectRevert(bytes4 selector) external;
}

/// a token that, asked to move funds, calls the proxy again (the reentrancy lock must refuse it)
contract ReenteringToken {
    X402UptoPermit2Proxy internal immutable proxy;

    constructor(X402UptoPermit2Proxy proxy_) {
        proxy = proxy_;
    }

    function transferFrom(address, address, uint256) external returns (bool) {
        ISignatureTransfer.PermitTransferFrom memory p = ISignatureTransfer.PermitTransferFrom(ISignatureTransfer.TokenPermissions(address(this), 1), 0, 0);
        try proxy.settle(p, 1, address(1), X402UptoPermit2Proxy.Witness(address(1), address(this), 0), "") {} catch (bytes memory data) {
            assembly {
                revert(add(data, 32), mload(data))
            }
        }
        return true;
    }
}

/// Both contracts are placed at their canonical addresses as the local chain places them (runtime code only,
/// no constructor), on chain 84532. Signatures are built here from the EIP-712 definitions, not from the contracts.
contract UptoPermit2Test {
    Vm internal constant vm = Vm(address(uint160(uint256(keccak256("hevm cheat code")))));

    address internal constant PERMIT2 = 0x000000000022D473030F116dDEE9F6B43aC78BA3;
    address internal constant PROXY = 0x4020A4f3b7b90ccA423B9fabCc0CE57C6C240002;
    address internal constant USDC = 0x036CbD53842c5426634e7929541eC2318f3dCF7e;
    bytes32 internal constant PERMIT_WITNESS_TYPEHASH = keccak256(
        "PermitWitnessTransferFrom(TokenPermissions permitted,address spender,uint256 nonce,uint256 deadline,Witness witness)TokenPermissions(address token,uint256 amount)Witness(address to,address facilitator,uint256 validAfter)"
    );
    uint256 internal constant PAYER_PK = 0xA11CE;
    uint256 internal constant OTHER_PK = 0xB0B;
    uint256 internal constant MAX = 5_000;
    uint256 internal constant NOW = 1_800_000_000;
    /// the official proxy's only settlement events (no arguments)
    bytes32 internal constant SETTLED = keccak256("Settled()");
    bytes32 internal constant SETTLED_WITH_PERMIT = keccak256("SettledWithPermit()");

    address internal payer;
    address internal facilitator = address(0xFAC1);
    address internal payTo = address(0xBEEF);
    TestUSDC internal usdc = TestUSDC(USDC);
    X402UptoPermit2Proxy internal proxy = X402UptoPermit2Proxy(PROXY);
    Permit2SignatureTransfer internal permit2 = Permit2SignatureTransfer(PERMIT2);

    function setUp() public {
        vm.chainId(84532);
        vm.warp(NOW);
        vm.etch(USDC, address(new TestUSDC()).code);
        vm.store(USDC, bytes32(0), bytes32(uint256(uint160(address(this)))));
        vm.etch(PERMIT2, address(new Permit2SignatureTransfer()).code);
        vm.etch(PROXY, address(new X402UptoPermit2Proxy()).code);
        payer = vm.addr(PAYER_PK);
        usdc.mint(payer, 1_000_000_000);
        vm.prank(payer);
        usdc.approve(PERMIT2, type(uint256).max);
    }

    // ---- helpers ----

    function _bound(uint256 x, uint256 lo, uint256 hi) internal pure returns (uint256) {
        return lo + (x % (hi - lo + 1));
    }

    function _permit(address token, uint256 max, uint256 nonce) internal pure returns (ISignatureTransfer.PermitTransferFrom memory) {
        return ISignatureTransfer.PermitTransferFrom(ISignatureTransfer.TokenPermissions(token, max), nonce, NOW + 300);
    }

    function _witness() internal view returns (X402UptoPermit2Proxy.Witness memory) {
        return X402UptoPermit2Proxy.Witness(payTo, facilitator, 0);
    }

    function _digest(ISignatureTransfer.PermitTransferFrom memory p, address spender, X402UptoPermit2Proxy.Witness memory w) internal view returns (bytes32) {
        bytes32 domain = keccak256(
            abi.encode(keccak256("EIP712Domain(string name,uint256 chainId,address verifyingContract)"), keccak256("Permit2"), block.chainid, PERMIT2)
        );
        bytes32 witnessHash = keccak256(abi.encode(keccak256("Witness(address to,address facilitator,uint256 validAfter)"), w.to, w.facilitator, w.validAfter));
        bytes32 permitted = keccak256(abi.encode(keccak256("TokenPermissions(address token,uint256 amount)"), p.permitted.token, p.permitted.amount));
        bytes32 structHash = keccak256(abi.encode(PERMIT_WITNESS_TYPEHASH, permitted, spender, p.nonce, p.deadline, witnessHash));
        return keccak256(abi.encodePacked("\x19\x01", domain, structHash));
    }

    function _sign(uint256 pk, ISignatureTransfer.PermitTransferFrom memory p, X402UptoPermit2Proxy.Witness memory w) internal returns (bytes memory) {
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(pk, _digest(p, PROXY, w));
        return abi.encodePacked(r, s, v);
    }

    function _settleAsFacilitator(ISignatureTransfer.PermitTransferFrom memory p, uint256 amount, X402UptoPermit2Proxy.Witness memory w, bytes memory sig) internal {
        vm.prank(facilitator);
        proxy.settle(p, amount, payer, w, sig);
    }

    function _eq(uint256 a, uint256 b, string memory what) internal pure {
        require(a == b, what);
    }

    /// as the official proxy: the proxy's only log of a settlement is one argument-less `event_` (the facilitator reads the
    /// settlement from the call, gateway/src/x402/facilitator/upto.ts)
    function _expectSettledLog(VmLog[] memory logs, bytes32 event_) internal pure {
        uint256 found;
        for (uint256 i; i < logs.length; i++) {
            if (logs[i].emitter != PROXY) continue;
            found++;
            require(logs[i].topics.length == 1 && logs[i].topics[0] == event_, "the official event");
            _eq(logs[i].data.length, 0, "no arguments");
        }
        _eq(found, 1, "one proxy log per settlement");
    }

    // ---- what must work ----

    function testDomainSeparatorIsPermit2sOnThisChain() public {
        bytes32 expected = keccak256(
            abi.encode(keccak256("EIP712Domain(string name,uint256 chainId,address verifyingContract)"), keccak256("Permit2"), uint256(84532), PERMIT2)
        );
        require(permit2.DOMAIN_SEPARATOR() == expected, "domain on 84532");
        vm.chainId(8453);
        require(permit2.DOMAIN_SEPARATOR() != expected, "domain follows the chain id");
        require(address(proxy.PERMIT2()) == PERMIT2, "proxy's Permit2");
        require(proxy.WITNESS_TYPEHASH() == keccak256("Witness(address to,address facilitator,uint256 validAfter)"), "witness typehash");
    }

    /// any amount up to the signed maximum moves exactly, once; the rest of the maximum stays with the payer
    function testFuzzSettleUpToTheMaximum(uint256 maxSeed, uint256 usedSeed, uint256 nonce) public {
        uint256 max = _bound(maxSeed, 1, 1_000_000_000);
        uint256 used = _bound(usedSeed, 1, max);
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, max, nonce);
        bytes memory sig = _sign(PAYER_PK, p, _witness());
        uint256 payerBefore = usdc.balanceOf(payer);
        _settleAsFacilitator(p, used, _witness(), sig);
        _eq(payerBefore - usdc.balanceOf(payer), used, "payer paid the used amount");
        _eq(usdc.balanceOf(payTo), used, "payTo got the used amount");
        _eq(permit2.nonceBitmap(payer, nonce >> 8), 1 << (nonce & 0xff), "nonce spent");
    }

    /// the settlement's record on chain: the official `Settled()` and nothing else from the proxy
    function testFuzzSettleLogsOnlySettled(uint256 usedSeed, uint256 nonce) public {
        uint256 used = _bound(usedSeed, 1, MAX);
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, nonce);
        bytes memory sig = _sign(PAYER_PK, p, _witness());
        require(X402UptoPermit2Proxy.Settled.selector == SETTLED, "event signature");
        vm.recordLogs();
        _settleAsFacilitator(p, used, _witness(), sig);
        _expectSettledLog(vm.getRecordedLogs(), SETTLED);
    }

    function testCompactSignatureAccepted() public {
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, 7);
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(PAYER_PK, _digest(p, PROXY, _witness()));
        bytes32 vs = bytes32(uint256(s) | (uint256(v - 27) << 255));
        _settleAsFacilitator(p, 10, _witness(), abi.encodePacked(r, vs));
        _eq(usdc.balanceOf(payTo), 10, "settled with an EIP-2098 signature");
    }

    function testSettleWithPermitWithoutPriorApproval() public {
        vm.prank(payer);
        usdc.approve(PERMIT2, 0);
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, 8);
        bytes32 structHash = keccak256(abi.encode(usdc.PERMIT_TYPEHASH(), payer, PERMIT2, MAX, usdc.nonces(payer), NOW + 300));
        (uint8 v, bytes32 r, bytes32 s) = vm.sign(PAYER_PK, keccak256(abi.encodePacked("\x19\x01", usdc.DOMAIN_SEPARATOR(), structHash)));
        bytes memory sig = _sign(PAYER_PK, p, _witness());
        vm.recordLogs();
        vm.prank(facilitator);
        proxy.settleWithPermit(X402UptoPermit2Proxy.EIP2612Permit(MAX, NOW + 300, r, s, v), p, 1234, payer, _witness(), sig);
        _expectSettledLog(vm.getRecordedLogs(), SETTLED_WITH_PERMIT);
        _eq(usdc.balanceOf(payTo), 1234, "settled after the permit");
        _eq(usdc.allowance(payer, PERMIT2), MAX - 1234, "Permit2 approved for the maximum");
    }

    // ---- each way out, attempted ----

    function testFuzzMoreThanTheMaximumRefused(uint256 excessSeed) public {
        uint256 excess = _bound(excessSeed, 1, type(uint128).max);
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, 1);
        bytes memory sig = _sign(PAYER_PK, p, _witness());
        vm.expectRevert(X402UptoPermit2Proxy.AmountExceedsPermitted.selector);
        _settleAsFacilitator(p, MAX + excess, _witness(), sig);
    }

    function testRaisedMaximumRefused() public {
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, 1);
        bytes memory sig = _sign(PAYER_PK, p, _witness());
        p.permitted.amount = MAX * 2; // the facilitator claims a larger signed maximum
        vm.expectRevert(Permit2SignatureTransfer.InvalidSigner.selector);
        _settleAsFacilitator(p, MAX + 1, _witness(), sig);
    }

    function testOtherPayToRefused() public {
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, 2);
        bytes memory sig = _sign(PAYER_PK, p, _witness());
        X402UptoPermit2Proxy.Witness memory w = _witness();
        w.to = address(0xBAD);
        vm.expectRevert(Permit2SignatureTransfer.InvalidSigner.selector);
        _settleAsFacilitator(p, 100, w, sig);
    }

    function testOtherTokenRefused() public {
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, 3);
        bytes memory sig = _sign(PAYER_PK, p, _witness());
        p.permitted.token = address(new TestUSDC());
        vm.expectRevert(Permit2SignatureTransfer.InvalidSigner.selector);
        _settleAsFacilitator(p, 100, _witness(), sig);
    }

    function testAfterDeadlineRefused() public {
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, 4);
        bytes memory sig = _sign(PAYER_PK, p, _witness());
        vm.warp(p.deadline); // the last valid second
        _settleAsFacilitator(p, 1, _witness(), sig);
        p.nonce = 5;
        sig = _sign(PAYER_PK, p, _witness());
        vm.warp(p.deadline + 1);
        vm.expectRevert(abi.encodeWithSelector(Permit2SignatureTransfer.SignatureExpired.selector, p.deadline));
        _settleAsFacilitator(p, 1, _witness(), sig);
    }

    function testBeforeValidAfterRefused() public {
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, 6);
        X402UptoPermit2Proxy.Witness memory w = _witness();
        w.validAfter = NOW + 60;
        bytes memory sig = _sign(PAYER_PK, p, w);
        vm.expectRevert(X402UptoPermit2Proxy.PaymentTooEarly.selector);
        _settleAsFacilitator(p, 1, w, sig);
        vm.warp(NOW + 60);
        _settleAsFacilitator(p, 1, w, sig);
        _eq(usdc.balanceOf(payTo), 1, "settles from validAfter on");
    }

    /// one authorization settles once: neither a replay nor a second settle of the unused rest
    function testReplayRefused() public {
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, 9);
        bytes memory sig = _sign(PAYER_PK, p, _witness());
        _settleAsFacilitator(p, 1000, _witness(), sig);
        vm.expectRevert(Permit2SignatureTransfer.InvalidNonce.selector);
        _settleAsFacilitator(p, 1000, _witness(), sig);
        vm.expectRevert(Permit2SignatureTransfer.InvalidNonce.selector);
        _settleAsFacilitator(p, MAX - 1000, _witness(), sig);
        _eq(usdc.balanceOf(payTo), 1000, "paid once");
    }

    function testCancelledNonceRefused() public {
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, 300); // word 1, bit 44
        bytes memory sig = _sign(PAYER_PK, p, _witness());
        vm.prank(payer);
        permit2.invalidateUnorderedNonces(1, 1 << 44);
        vm.expectRevert(Permit2SignatureTransfer.InvalidNonce.selector);
        _settleAsFacilitator(p, 1, _witness(), sig);
    }

    function testSomeoneElsesSignatureRefused() public {
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, 10);
        bytes memory sig = _sign(OTHER_PK, p, _witness());
        vm.expectRevert(Permit2SignatureTransfer.InvalidSigner.selector);
        _settleAsFacilitator(p, 1, _witness(), sig);
        _eq(usdc.balanceOf(payTo), 0, "nothing moved");
    }

    function testCallerNotTheFacilitatorRefused() public {
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, 11);
        bytes memory sig = _sign(PAYER_PK, p, _witness());
        vm.prank(address(0xA77AC4));
        vm.expectRevert(X402UptoPermit2Proxy.UnauthorizedFacilitator.selector);
        proxy.settle(p, 1, payer, _witness(), sig);
        // naming itself the facilitator changes the signed witness
        X402UptoPermit2Proxy.Witness memory w = _witness();
        w.facilitator = address(0xA77AC4);
        vm.prank(address(0xA77AC4));
        vm.expectRevert(Permit2SignatureTransfer.InvalidSigner.selector);
        proxy.settle(p, 1, payer, w, sig);
    }

    /// Permit2 called directly with the payer's signature: the spender signed was the proxy
    function testDirectPermit2CallRefused() public {
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, 12);
        X402UptoPermit2Proxy.Witness memory w = _witness();
        bytes memory sig = _sign(PAYER_PK, p, w);
        bytes32 witnessHash = keccak256(abi.encode(proxy.WITNESS_TYPEHASH(), w.to, w.facilitator, w.validAfter));
        string memory witnessType = proxy.WITNESS_TYPE_STRING();
        vm.prank(facilitator);
        vm.expectRevert(Permit2SignatureTransfer.InvalidSigner.selector);
        permit2.permitWitnessTransferFrom(p, ISignatureTransfer.SignatureTransferDetails(address(0xBAD), 1), payer, witnessHash, witnessType, sig);
    }

    function testZeroAmountRefused() public {
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, 13);
        bytes memory sig = _sign(PAYER_PK, p, _witness());
        vm.expectRevert(X402UptoPermit2Proxy.InvalidAmount.selector);
        _settleAsFacilitator(p, 0, _witness(), sig);
    }

    function testWithoutApprovalRefused() public {
        vm.prank(payer);
        usdc.approve(PERMIT2, 0);
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, 14);
        bytes memory sig = _sign(PAYER_PK, p, _witness());
        vm.expectRevert(TestUSDC.InsufficientAllowance.selector);
        _settleAsFacilitator(p, 1, _witness(), sig);
    }

    function testPermitValueOtherThanTheMaximumRefused() public {
        ISignatureTransfer.PermitTransferFrom memory p = _permit(USDC, MAX, 15);
        bytes memory sig = _sign(PAYER_PK, p, _witness());
        vm.prank(facilitator);
        vm.expectRevert(X402UptoPermit2Proxy.Permit2612AmountMismatch.selector);
        proxy.settleWithPermit(X402UptoPermit2Proxy.EIP2612Permit(type(uint256).max, NOW + 300, 0, 0, 27), p, 1, payer, _witness(), sig);
    }

    function testReentryRefused() public {
        ISignatureTransfer.PermitTransferFrom memory p = _permit(address(new ReenteringToken(proxy)), MAX, 16);
        bytes memory sig = _sign(PAYER_PK, p, _witness());
        vm.expectRevert(X402UptoPermit2Proxy.ReentrancyGuardReentrantCall.selector);
        _settleAsFacilitator(p, 1, _witness(), sig);
    }
}
